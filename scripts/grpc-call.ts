/**
 * A small gRPC client for the inbox and preferences APIs, over the project's own grpc-js and protos, so the README's
 * examples work without grpcurl (which neither Debian nor npm ships):
 *
 *   npm run -s grpc -- GetUnreadCount '{"caller":{"app_code":"lalu","user_id":"10001"}}'
 *   npm run -s grpc -- --addr 10.0.0.5:13010 --ca ca.pem --cert gw.pem --key gw.key ListNotifications '{…}'
 *   npm run -s grpc -- WatchInbox '{"caller":{…}}' --max 3
 *   npm run -s grpc -- list
 *
 * Answers print as JSON (a stream: one line per event). Exit 0 on an answer, 1 on a gRPC error (its code and details
 * on one line), 2 on a usage error.
 */
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { INBOX_PROTO } from '../src/channels/inbox/api/inbox-service.ts';
import { PREFERENCES_PROTO } from '../src/preferences/api.ts';

const USAGE = 'usage: npm run -s grpc -- [--addr host:port] [--ca file --cert file --key file] [--max n] (list | <Method> [json request])';

function usage(problem: string): never {
  process.stderr.write(`grpc: ${problem}\n${USAGE}\n`);
  process.exit(2);
}

interface Options {
  addr: string;
  ca?: string;
  cert?: string;
  key?: string;
  max: number;
  positional: string[];
}

function parse(argv: string[]): Options {
  const options: Options = { addr: '127.0.0.1:13010', max: Infinity, positional: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => argv[++i] ?? usage(`${arg} needs a value`);
    if (arg === '--addr') options.addr = value();
    else if (arg === '--ca' || arg === '--cert' || arg === '--key') options[arg.slice(2) as 'ca' | 'cert' | 'key'] = value();
    else if (arg === '--max') {
      options.max = Number(value());
      if (!Number.isInteger(options.max) || options.max < 1) usage(`--max must be a whole number above 0, got "${argv[i]}"`);
    } else if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else if (arg.startsWith('--')) usage(`unknown option '${arg}'`);
    else options.positional.push(arg);
  }
  const tls = [options.ca, options.cert, options.key].filter((v) => v !== undefined).length;
  if (tls !== 0 && tls !== 3) usage('--ca, --cert and --key go together (mutual TLS)');
  return options;
}

/** Every method of both APIs by its short name, with its service's full name. */
async function methods(): Promise<Map<string, { service: string; client: grpc.ServiceClientConstructor; stream: boolean }>> {
  const found = new Map<string, { service: string; client: grpc.ServiceClientConstructor; stream: boolean }>();
  for (const file of [INBOX_PROTO, PREFERENCES_PROTO]) {
    const definition = await protoLoader.load(file, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
    const loaded = grpc.loadPackageDefinition(definition);
    for (const [name, value] of Object.entries(definition)) {
      if (!('format' in value) && Object.values(value).some((m: any) => m?.path)) {
        const client = name.split('.').reduce((node: any, part) => node[part], loaded) as grpc.ServiceClientConstructor;
        for (const [method, spec] of Object.entries(value as Record<string, any>))
          found.set(method, { service: name, client, stream: Boolean(spec.responseStream) });
      }
    }
  }
  return found;
}

const options = parse(process.argv.slice(2));
const [command, body = '{}', ...extra] = options.positional;
if (!command) usage('name a method, or list');
if (extra.length > 0) usage(`too many arguments: ${extra.join(' ')}`);
const all = await methods();
if (command === 'list') {
  for (const [method, { service, stream }] of all) process.stdout.write(`${service}/${method}${stream ? ' (stream)' : ''}\n`);
  process.exit(0);
}
const short = command.split('/').pop()!;
const target = all.get(short);
if (!target) usage(`no method '${command}'; one of: ${[...all.keys()].join(', ')}`);
let request: unknown;
try {
  request = JSON.parse(body);
} catch (err) {
  usage(`the request is not JSON: ${(err as Error).message}`);
}
const credentials = options.ca
  ? grpc.credentials.createSsl(readFileSync(options.ca), readFileSync(options.key!), readFileSync(options.cert!))
  : grpc.credentials.createInsecure();
const client = new target.client(options.addr, credentials) as any;
const deadline = () => Date.now() + 10_000;
const failed = (err: grpc.ServiceError) => {
  process.stderr.write(`grpc: ${grpc.status[err.code] ?? err.code}: ${err.details || err.message}\n`);
  client.close();
  process.exit(1);
};

if (target.stream) {
  let seen = 0;
  const call = client[short](request);
  call.on('data', (event: unknown) => {
    process.stdout.write(`${JSON.stringify(event)}\n`);
    if (++seen >= options.max) {
      call.cancel();
      client.close();
      process.exit(0);
    }
  });
  call.on('error', (err: grpc.ServiceError) => (err.code === grpc.status.CANCELLED ? undefined : failed(err)));
  call.on('end', () => client.close());
} else {
  client[short](request, { deadline: deadline() }, (err: grpc.ServiceError | null, answer: unknown) => {
    if (err) failed(err);
    process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    client.close();
  });
}
