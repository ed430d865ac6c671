import { existsSync, readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { ConfigError, defaultConfigPath, loadConfigFile } from '../src/composition/load.ts';
import type { NoticeConfig } from '../src/config/schema.ts';
import { jsonForTerminal, showControls } from '../src/platform/text.ts';
import { PeriodicSummary } from '../src/platform/periodic-summary.ts';
import { createLogger, redactUrl } from '../src/platform/logger.ts';
import { outputFormat } from '../src/ops/cli-format.ts';
import { RoleConfigError } from '../src/app/role.ts';
import { ingestEnabled } from '../src/notices/sources.ts';
import type { RoleName } from './run-roles.ts';
import { channelRoles } from '../src/channels/channel-set.ts';
import { REGISTERED_MODULES } from '../src/composition/schema.ts';
import { sourceModules, sourceSettings } from '../src/notices/sources.ts';
// Each command imports what it needs when it runs, so a deliver process never loads express or the MQ client.

// From source (cli/) and from the build (dist/cli/) alike.
const packageJson = ['../package.json', '../../package.json'].map((p) => new URL(p, import.meta.url)).find((u) => existsSync(u))!;
const { version } = JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string };

const program = new Command('notice-service')
  .version(version, '-V, --version')
  .description('Outbox facts → private notices (Tencent IM C2C, site inbox, phone push), with a MySQL delivery ledger')
  // Usage errors are one line that names the problem (and commander's "Did you mean …?"), then exit 2 as --help
  // promises; exitOverride is inherited by every command added below.
  .exitOverride()
  .configureOutput({ outputError: (text, write) => write(`notice-service: ${text.replace(/^error: /, '').trimEnd()} (see --help)\n`) })
  .addHelpText(
    'after',
    '\nExit codes: 0 done; 1 nothing (or not everything) asked for was found; 2 bad arguments or config; 3 MySQL or Redis unreachable.\nTimes are ' +
      'shown in display.time_zone (UTC by default); --output json keeps epoch milliseconds too.',
  );

/**
 * NOTICE_VALIDATE_ONLY=1: parse the command line and the config, then exit 0 without doing anything. CI uses it to
 * prove every docker-compose command is one this CLI accepts, with the config the services run with.
 */
program.hook('preAction', (_program, action) => {
  if (process.env.NOTICE_VALIDATE_ONLY !== '1') return;
  loadConfig((action.opts() as { config?: string }).config);
  console.log(`notice-service ${action.name()}: arguments and config are valid`);
  process.exit(0);
});

const configOption = () => new Option('-c, --config <file>', 'config file (default: $NOTICE_CONFIG, else configs/local.yaml)');
const outputOption = () => new Option('-o, --output <format>', 'table (for people) or json (for scripts)').default('table');

/** Exit code 1: the command ran and found nothing (or not everything) it was asked for. */
function notFound(message: string): void {
  console.error(`notice-service: ${message}`);
  process.exitCode = 1;
}

function loadConfig(file: string | undefined): NoticeConfig {
  return loadConfigFile(file ?? defaultConfigPath());
}

program
  .command('migrate')
  .description("apply notice-service's own migrations (drizzle/migrations)")
  .addOption(configOption())
  .option('--owner-fixtures', 'also create the reference owner outbox tables (dev and tests only)')
  .action(async (opts: { config?: string; ownerFixtures?: boolean }) => {
    const config = loadConfig(opts.config);
    const logger = createLogger(config.log.level, { role: 'migrate' });
    const { runMigrations } = await import('../src/db/migrate.ts');
    const { serverProblem, UnreachableError } = await import('../src/ops/server-errors.ts');
    const { database } = await runMigrations({
      mysqlUrl: config.mysql.url,
      ownerFixtures: opts.ownerFixtures ? config : undefined,
    }).catch((err: unknown) => {
      throw new UnreachableError(serverProblem('MySQL', config.mysql.url, err));
    });
    logger.info({ database, mysql: redactUrl(config.mysql.url), owner_fixtures: Boolean(opts.ownerFixtures) }, 'migrations applied');
  });

for (const [name, roles, description] of [
  ['ingest', ['ingest'], 'poll the enabled owner outboxes into the ledger and the deliver queue'],
  ['deliver', ['deliver'], 'send queued notices over every routed channel (C2C, inbox, push) and record the outcome'],
  ['all', null, 'every enabled role in one process'],
  ['dashboard', ['dashboard'], 'bull-board and the ledger search/requeue page, behind basic auth'],
  // Roles a channel serves beyond delivery (the inbox's gRPC API), from its module.
  ...REGISTERED_MODULES.channels.flatMap((m) => (m.roles ?? []).map((r) => [r.name, [r.name], r.description] as const)),
] as const) {
  program
    .command(name)
    .description(description)
    .addOption(configOption())
    .action(async (opts: { config?: string }) => {
      const config = loadConfig(opts.config);
      const logger = createLogger(config.log.level, { role: name });
      const chosen: RoleName[] = roles ? [...roles] : rolesEnabledIn(config);
      const { runRoles } = await import('./run-roles.ts');
      await runRoles(config, chosen, logger);
    });
}

function rolesEnabledIn(config: NoticeConfig): RoleName[] {
  const roles: RoleName[] = [];
  if (ingestEnabled(config)) roles.push('ingest');
  if (config.deliver.enabled) roles.push('deliver');
  for (const role of channelRoles(config)) if (role.enabled(config)) roles.push(role.name);
  if (roles.length === 0)
    throw new RoleConfigError('nothing to run: no ingest source is enabled, deliver.enabled is false and no channel role (inbox.api_enabled) is on');
  return roles;
}

program
  .command('config')
  .description('configuration tools')
  .command('check')
  .description('validate a config without starting anything: every key, the inbox API TLS files, and what each listener would bind')
  .addOption(configOption())
  .action(async (opts: { config?: string }) => {
    const file = opts.config ?? defaultConfigPath();
    const config = loadConfig(file);
    const { listenerSummary } = await import('../src/composition/check.ts');
    const listeners = await listenerSummary(config);
    console.log(`${file}: valid`);
    for (const line of listeners) console.log(`  ${line}`);
    const { configDeprecations } = await import('../src/composition/load.ts');
    for (const note of configDeprecations(config)) console.log(`  deprecated: ${note}`);
  });

program
  .command('fake-im')
  .description('a local Tencent IM REST simulator (sendmsg), keyed by tencent_im.* of the config')
  .addOption(configOption())
  .option('-p, --port <port>', 'port to listen on', '18080')
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .action(async (opts: { config?: string; port: string; host: string }) => {
    const config = loadConfig(opts.config);
    const logger = createLogger(config.log.level, { role: 'fake-im' });
    const port = Number(opts.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RoleConfigError(`--port must be a port number, got "${opts.port}"`);
    const { FakeImServer } = await import('../src/fake-im/server.ts');
    const { tencentApps } = await import('../src/tencent-im/apps.ts');
    // Every app of the config with Tencent credentials (apps.<app_code>.tencent_im), each verifying its own UserSig.
    const apps = [...tencentApps(config).values()].map((a) => ({ sdkAppId: a.sdkAppId, secretKey: a.secretKey, adminIdentifier: a.adminIdentifier }));
    const first = apps[0] ?? { sdkAppId: 1400000000, secretKey: 'fake-im-without-apps', adminIdentifier: config.tencent_im.admin_identifier };
    const server = new FakeImServer({ ...first, apps: apps.slice(1) });
    const url = await server.listen(port, opts.host);
    logger.info(
      { url, sdk_app_ids: [first, ...apps.slice(1)].map((a) => a.sdkAppId) },
      'fake-im listening (GET /_fake/messages, /_fake/stats; POST /_fake/faults, /_fake/reset)',
    );
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', () => resolve());
      process.once('SIGINT', () => resolve());
    });
    await server.close();
  });

const demoCommand = program
  .command('demo')
  .description("dev/demo only: keep writing realistic outbox rows, playing the owner services (each source module's demo)")
  .addOption(configOption())
  .option('--rate <n>', 'rows per second of the main stream (the wallet); the others write a share of it', '5')
  .option('--total <n>', 'stop after this many rows of the main stream (0 = run until stopped)', '0');
for (const module of REGISTERED_MODULES.sources) {
  const demo = module.demo;
  if (demo?.flag) demoCommand.option(`--${demo.flag.name}`, demo.flag.description, false);
  for (const option of demo?.options ?? []) demoCommand.option(`--${option.name}`, option.description, false);
}
demoCommand.action(async (opts: Record<string, string | boolean | undefined> & { config?: string; rate: string; total: string }) => {
  const config = loadConfig(opts.config);
  const logger = createLogger(config.log.level, { role: 'demo' });
  const rate = Math.max(1, Number(opts.rate) || 5);
  const total = Math.max(0, Number(opts.total) || 0);
  const { createMysqlPool } = await import('../src/platform/mysql.ts');
  const pool = createMysqlPool(config.mysql.url, 2);
  // Commander names --publish-kicks publishKicks; the modules know their flags by their dashed names.
  const flags = new Set(
    Object.entries(opts)
      .filter(([, v]) => v === true)
      .map(([k]) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)),
  );
  const writers = await Promise.all(
    sourceModules(config)
      .filter((m) => m.demo && (!m.demo.flag || flags.has(m.demo.flag.name)))
      .map(async (m) => ({
        module: m,
        share: m.demo!.share,
        writer: await m.demo!.open({ config, pool, database: sourceSettings(config, m).database, logger, flags }),
      })),
  );
  let written = 0;
  // A line per 10 s with the rows since the last one: a line per batch (1 s) drowned the dev log.
  const progress = new PeriodicSummary<string>(10_000, (rows) => logger.info({ ...rows, total_rows: written }, 'demo rows committed'));
  let stopping = false;
  process.once('SIGTERM', () => (stopping = true));
  process.once('SIGINT', () => (stopping = true));
  while (!stopping && (total === 0 || written < total)) {
    const batch = total === 0 ? rate : Math.min(rate, total - written);
    const rows: Record<string, number> = {};
    try {
      for (const { module, share, writer } of writers) {
        const n = await writer.write(share >= 1 ? batch : Math.max(1, Math.ceil(batch * share)));
        rows[`${module.key}_rows`] = n;
        if (share >= 1) written += n;
      }
      progress.add(Date.now(), rows);
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'demo write failed; retrying');
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  progress.tick(Number.POSITIVE_INFINITY);
  for (const { writer } of writers) await writer.close?.();
  await pool.end();
});

program
  .command('inspect')
  .description("one event's ledger rows, or a user's facts newest first (--user), each channel's standing in words")
  .argument('[event_id]', 'an event id (exact)')
  .addOption(configOption())
  .option('--user <user_id>', "the user's facts, newest first")
  .option('--since <when>', 'facts recorded since: a duration ("24h") or an ISO time')
  .option('--until <when>', 'facts recorded before: a duration ("1h") or an ISO time')
  .option('--kind <notice_kind>', 'only this notice kind')
  .option('--status <status>', 'only channels in this status (failed, retryable, delivered, …)')
  .option('--channel <channel>', 'only this channel')
  .option('--code <error_code>', 'only channels whose last error is this code (90012, MALFORMED, …)')
  .option('--limit <n>', 'at most this many facts', '50')
  .addOption(outputOption())
  .action(
    async (
      eventId: string | undefined,
      opts: {
        config?: string;
        user?: string;
        since?: string;
        until?: string;
        kind?: string;
        status?: string;
        channel?: string;
        code?: string;
        limit: string;
        output: string;
      },
    ) => {
      const output = outputFormat(opts.output);
      if (!eventId && !opts.user) throw new RoleConfigError('give an event id or --user <user_id>');
      const config = loadConfig(opts.config);
      const ops = await import('../src/ops/cli-ops.ts');
      if (eventId && !opts.user && output === 'json') {
        // Scripts get every row of the event as it stands: timeline, payload and job.
        const rows = await ops.inspectEvent(config, eventId);
        if (rows.length === 0)
          return notFound(`no ledger row has event id "${eventId}" (an event id, not a user id; ids are exact, and rows past retention are purged)`);
        return void console.log(jsonForTerminal(rows));
      }
      const result = await ops.timelineCommand(config, { ...opts, event: eventId });
      if (output === 'json') console.log(jsonForTerminal(result));
      else console.log((await import('../src/ops/cli-format.ts')).factsAsText(result.facts, result.zone, result.more));
      if (result.facts.length === 0) {
        notFound(
          eventId
            ? `no ledger row has event id "${eventId}"${opts.user ? ` for user ${opts.user}` : ''} (an event id, not a user id; ids are exact, and ` +
                `rows past retention are purged)`
            : `no facts for user ${opts.user} match (user ids are exact; rows past retention are purged)`,
        );
      }
    },
  );

program
  .command('failures')
  .description('what ended failed (or another status) across every user, grouped by error code with what to do, newest rows first')
  .addOption(configOption())
  .option('--status <status>', 'which status (failed, suppressed, expired, …)', 'failed')
  .option('--since <when>', 'rows updated since: a duration ("1h") or an ISO time', '1h')
  .option('--until <when>', 'rows updated before: a duration or an ISO time')
  .option('--channel <channel>', 'only this channel')
  .option('--kind <notice_kind>', 'only this notice kind')
  .option('--source <source_name>', 'only this source')
  .option('--app <app_code>', 'only this app')
  .option('--code <error_code>', 'only this error code (90012, …)')
  .option('--limit <n>', 'rows per page', '50')
  .option('--after <token>', 'the next (older) page: the token the previous answer printed')
  .addOption(outputOption())
  .action(async (opts: { config?: string; output: string } & import('../src/ops/failures.ts').FailuresOptions) => {
    const output = outputFormat(opts.output);
    const { failuresCommand, failuresAsText } = await import('../src/ops/failures.ts');
    const answer = await failuresCommand(loadConfig(opts.config), opts);
    console.log(output === 'json' ? jsonForTerminal(answer) : failuresAsText(answer));
  });

program
  .command('audit')
  .description('operator actions (requeues from the dashboard or this CLI), newest first')
  .addOption(configOption())
  .option('--limit <n>', 'at most this many', '20')
  .addOption(outputOption())
  .action(async (opts: { config?: string; limit: string; output: string }) => {
    const output = outputFormat(opts.output);
    const { auditCommand } = await import('../src/ops/cli-ops.ts');
    const actions = await auditCommand(loadConfig(opts.config), opts.limit);
    if (output === 'json') return void console.log(jsonForTerminal(actions));
    if (actions.length === 0) return void console.log('no operator actions yet');
    for (const a of actions)
      console.log(showControls(`${a.at}  ${a.actor} (${a.via})  ${a.action}  matched ${a.matched}, changed ${a.affected}  ${JSON.stringify(a.detail)}`));
  });

const rejects = program.command('rejects').description('MQ messages acked without a ledger row (notice_rejected_messages)');
rejects
  .command('list', { isDefault: true })
  .description('list rejected messages, newest first (bodies with `rejects show <id>`)')
  .addOption(configOption())
  .option('--reason <text>', 'only those whose reason contains this')
  .option('--since <when>', 'only those received since: a duration ("2h") or an ISO time')
  .option('--limit <n>', 'at most this many', '50')
  .addOption(outputOption())
  .action(async (opts: { config?: string; reason?: string; since?: string; limit: string; output: string }) => {
    const output = outputFormat(opts.output);
    const { listRejectsCommand } = await import('../src/ops/cli-ops.ts');
    const listed = await listRejectsCommand(loadConfig(opts.config), opts);
    if (output === 'json') return void console.log(jsonForTerminal(listed));
    if (listed.rows.length === 0) return void console.log('no rejected messages match');
    for (const r of listed.rows)
      console.log(
        showControls(`#${r.id}  ${r.received}  ${r.sourceName}  ${r.tag || '-'}  ${r.messageId}  attempt ${r.deliveryAttempt}  ${r.bodyBytes} B  ${r.reason}`),
      );
    console.log(`\n${listed.rows.length} of ${listed.total}, newest first (bodies: rejects show <id>)`);
  });
rejects
  .command('show')
  .description('one rejected message with its raw body (text when UTF-8, and a hex dump)')
  .argument('<id>')
  .addOption(configOption())
  .action(async (id: string, opts: { config?: string }) => {
    const { showRejectCommand } = await import('../src/ops/cli-ops.ts');
    const shown = await showRejectCommand(loadConfig(opts.config), id);
    if (!shown) return notFound(`no rejected message with id ${id} (notice-service rejects lists them)`);
    console.log(jsonForTerminal(shown));
  });
rejects
  .command('requeue')
  .description('parse rejected messages again and record those that now pass (after a fix), like a fresh delivery')
  .argument('<ids...>')
  .addOption(configOption())
  .action(async (ids: string[], opts: { config?: string }) => {
    const { requeueRejectsCommand } = await import('../src/ops/cli-ops.ts');
    const result = await requeueRejectsCommand(loadConfig(opts.config), ids);
    console.log(jsonForTerminal(result));
    if (result.missing.length > 0) {
      console.error(`notice-service: no rejected message with id ${result.missing.join(', ')}`);
      process.exitCode = 1;
    }
  });

program
  .command('revoke')
  .description("take a fact's notices back: unsent ones never go, a sent C2C message is withdrawn, the inbox item removed")
  .argument('<event_id>')
  .addOption(configOption())
  .option('--source <source_name>', 'its source (found from the ledger when omitted)')
  .option('--app <app_code>', 'its app (found from the ledger when omitted)')
  .option('--wait <duration>', 'how long to wait for deliver to finish it', '30s')
  .addOption(outputOption())
  .action(async (eventId: string, opts: { config?: string; source?: string; app?: string; wait: string; output: string }) => {
    const output = outputFormat(opts.output);
    const { revokeCommand } = await import('../src/ops/cli-ops.ts');
    const { durationMs } = await import('../src/config/duration.ts');
    const wait = durationMs.safeParse(opts.wait);
    if (!wait.success) throw new RoleConfigError(`--wait must be a duration like "30s" or "2m", got "${opts.wait}"`);
    const result = await revokeCommand(loadConfig(opts.config), { eventId, source: opts.source, app: opts.app, waitMs: wait.data });
    if (output === 'json') console.log(jsonForTerminal(result));
    else
      console.log(
        `${result.asked ? 'revocation asked' : 'already asked before (one revocation per fact)'}; ${
          result.state === 'done' ? `done: ` + `${result.outcome}` : 'still being worked off by deliver (see inspect)'
        }`,
      );
    if (result.state !== 'done') process.exitCode = 1;
  });

program
  .command('requeue')
  .description('put failed events back to pending and enqueue them again (asks first; --yes for scripts)')
  .addOption(configOption())
  .requiredOption('--status <status>', 'which rows (only "failed")')
  .option('--source <source_name>', 'only this source (wallet_outbox, room_outbox, activity_outbox, …)')
  .option('--channel <channel>', 'only this channel (tencent_im_c2c, inbox, tencent_push, …)')
  .option('--user <user_id>', "only this user's rows")
  .option('--code <error_code>', 'only rows whose last error is this code (90012, …)')
  .option('--kind <notice_kind>', 'only this notice kind')
  .option('--app <app_code>', 'only this app')
  .option('--since <when>', 'only rows updated since: a duration ("2h") or an ISO time')
  .option('--until <when>', 'only rows updated before: a duration ("10m") or an ISO time')
  .option('--dry-run', 'count what would be requeued, change nothing', false)
  .option('-y, --yes', 'do not ask: requeue what matches', false)
  .addOption(outputOption())
  .action(
    async (opts: {
      config?: string;
      status: string;
      source?: string;
      channel?: string;
      user?: string;
      code?: string;
      kind?: string;
      app?: string;
      since?: string;
      until?: string;
      dryRun: boolean;
      yes: boolean;
      output: string;
    }) => {
      const output = outputFormat(opts.output);
      const { requeueCommand } = await import('../src/ops/cli-ops.ts');
      let refused = false;
      let declined = false;
      const result = await requeueCommand(loadConfig(opts.config), {
        ...opts,
        confirm: opts.yes
          ? undefined
          : async (matched) => {
              if (matched === 0) return true;
              if (!process.stdin.isTTY) {
                refused = true;
                return false;
              }
              const { createInterface } = await import('node:readline/promises');
              const rl = createInterface({ input: process.stdin, output: process.stderr });
              const answer = await rl.question(`requeue ${matched} failed row${matched === 1 ? '' : 's'}? [y/N] `);
              rl.close();
              declined = !/^y(es)?$/i.test(answer.trim());
              return !declined;
            },
      });
      if (declined) {
        console.error(`notice-service: nothing changed: ${result.matched} row${result.matched === 1 ? '' : 's'} match; answered no`);
        process.exitCode = 1;
        return;
      }
      if (output === 'json') console.log(jsonForTerminal(result));
      else {
        const what = result.dry_run ? `would requeue ${result.matched}` : `requeued ${result.requeued} of ${result.matched} matched`;
        console.log(
          `${what}${
            result.skipped.length
              ? `, ${result.skipped.length} skipped (${result.skipped
                  .slice(0, 3)
                  .map((s) => `${s.event_id}: ${s.reason}`)
                  .join('; ')})`
              : ''
          }`,
        );
      }
      if (refused) {
        console.error(
          `notice-service: nothing changed: ${result.matched} row${result.matched === 1 ? '' : 's'} match; run again with --yes to requeue them (no ` +
            `terminal to ask on)`,
        );
        process.exitCode = 2;
      }
    },
  );

process.on('unhandledRejection', (reason) => {
  console.error(JSON.stringify({ level: 'error', msg: 'unhandled rejection', err: String(reason).slice(0, 500) }));
});

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version end here too, with exit 0; anything else commander refused is a usage error, already said.
    process.exit(err.exitCode === 0 ? 0 : 2);
  }
  if (err instanceof ConfigError || err instanceof RoleConfigError) {
    console.error(`notice-service: ${err.message}`);
    // configs/local.yaml (the default) talks to the real Tencent IM and has it off: the local pipeline is elsewhere.
    if (err instanceof RoleConfigError && !process.argv.includes('--config') && !process.argv.includes('-c') && !process.env.NOTICE_CONFIG) {
      console.error('notice-service: this is configs/local.yaml; for the whole pipeline on this machine against fake-im, run `npm run dev` (configs/dev.yaml)');
    }
    process.exit(2);
  }
  if ((err as Error).constructor?.name === 'UnreachableError') {
    console.error(`notice-service: ${(err as Error).message}`);
    process.exit(3);
  }
  const { firstLine } = await import('../src/ops/server-errors.ts');
  console.error(`notice-service: ${firstLine(String((err as Error)?.message ?? err))}`);
  process.exit(1);
}
