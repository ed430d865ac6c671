import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface IssuedCert {
  certFile: string;
  keyFile: string;
  cert: Buffer;
  key: Buffer;
}

/** A throwaway PKI made with openssl for one test: CAs, and certificates each CA signs. */
export class TestPki {
  readonly dir = mkdtempSync(join(tmpdir(), 'notice-pki-'));
  private serial = 1;

  private openssl(...args: string[]): void {
    execFileSync('openssl', args, { cwd: this.dir, stdio: 'pipe' });
  }

  ca(name: string): IssuedCert {
    this.openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
    );
    return this.files(name);
  }

  /** A leaf signed by `ca`: a server certificate for 127.0.0.1/localhost, or a client one. */
  issue(ca: string, name: string, usage: 'server' | 'client'): IssuedCert {
    this.openssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    );
    writeFileSync(
      join(this.dir, `${name}.ext`),
      usage === 'server' ? 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' : 'extendedKeyUsage=clientAuth\n',
    );
    this.openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.crt`,
      '-CAkey',
      `${ca}.key`,
      '-set_serial',
      String(this.serial++),
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    );
    return this.files(name);
  }

  private files(name: string): IssuedCert {
    const certFile = join(this.dir, `${name}.crt`);
    const keyFile = join(this.dir, `${name}.key`);
    return { certFile, keyFile, cert: readFileSync(certFile), key: readFileSync(keyFile) };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
