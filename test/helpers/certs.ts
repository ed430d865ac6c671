import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface IssuedCert {
  certFile: string;
  keyFile: string;
  cert: Buffer;
  key: Buffer;
  /** When it stops being valid (issueExpiring only). */
  notAfterMs?: number;
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

  /** A key and a certificate request for `name` (the leaf's CN). */
  private request(name: string): void {
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
  }

  /** A leaf signed by `ca`: a server certificate for 127.0.0.1/localhost, or a client one. */
  issue(ca: string, name: string, usage: 'server' | 'client'): IssuedCert {
    this.request(name);
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

  /**
   * A client certificate signed by `ca` that expires `seconds` from now (openssl ca, since openssl x509 of OpenSSL 3.0
   * takes whole days only): the gateway's certificate running out while its connection is open.
   */
  issueExpiring(ca: string, name: string, seconds: number): IssuedCert {
    this.request(name);
    writeFileSync(join(this.dir, `${name}.ext`), 'extendedKeyUsage=clientAuth\n');
    writeFileSync(join(this.dir, 'index.txt'), '');
    writeFileSync(join(this.dir, 'serial'), `${(this.serial++).toString(16).padStart(2, '0')}\n`);
    writeFileSync(
      join(this.dir, 'ca.cnf'),
      '[ca]\ndefault_ca = d\n[d]\ndatabase = index.txt\nnew_certs_dir = .\nserial = serial\ndefault_md = sha256\npolicy = p\nunique_subject = no\n[p]\ncommonName = supplied\n',
    );
    const stamp = (d: Date) => `${d.toISOString().replace(/[-:T]/g, '').slice(2, 14)}Z`;
    const notAfter = new Date(Math.floor((Date.now() + seconds * 1000) / 1000) * 1000);
    this.openssl(
      'ca',
      '-batch',
      '-config',
      'ca.cnf',
      '-cert',
      `${ca}.crt`,
      '-keyfile',
      `${ca}.key`,
      '-in',
      `${name}.csr`,
      '-out',
      `${name}.crt`,
      '-notext',
      '-startdate',
      stamp(new Date(Date.now() - 3600_000)),
      '-enddate',
      stamp(notAfter),
      '-extfile',
      `${name}.ext`,
    );
    return { ...this.files(name), notAfterMs: notAfter.getTime() };
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
