import type { NoticeConfig } from '../config/schema.ts';
import { redisPrefixOf } from '../config/redis-keyspace.ts';

/** One app as the Tencent channels use it: every default filled in. */
export interface TencentApp {
  appCode: string;
  sdkAppId: number;
  secretKey: string;
  adminIdentifier: string;
  baseUrl: string;
  rateLimitPerSecond: number;
  pushRateLimitPerSecond: number;
  /** The prefix of its Redis keys (pacers among them): its own hash tag, or the deployment's (`redis_tag: deployment`). */
  redisPrefix: string;
}

/**
 * The apps of `apps` with Tencent IM credentials (`apps.<app_code>.tencent_im`), by app_code. The tencent_im block's
 * admin identifier, base URL and rates are the defaults an app may override.
 */
export function tencentApps(config: NoticeConfig): Map<string, TencentApp> {
  const im = config.tencent_im;
  const prefixOf = redisPrefixOf(config);
  const apps = new Map<string, TencentApp>();
  for (const [appCode, entry] of Object.entries(config.apps)) {
    const app = entry.tencent_im;
    if (!app) continue;
    apps.set(appCode, {
      appCode,
      sdkAppId: app.sdk_app_id,
      secretKey: app.secret_key,
      adminIdentifier: app.admin_identifier ?? im.admin_identifier,
      baseUrl: app.base_url ?? im.base_url,
      rateLimitPerSecond: app.rate_limit_per_second ?? im.rate_limit_per_second,
      pushRateLimitPerSecond: app.push_rate_limit_per_second ?? config.tencent_push.rate_limit_per_second,
      redisPrefix: prefixOf(appCode),
    });
  }
  return apps;
}

/** What keeps the Tencent channels from sending for the apps of this config, each naming its key. */
export function appsProblems(config: NoticeConfig): string[] {
  const problems: string[] = [];
  const apps = tencentApps(config);
  if (config.tencent_im.enabled && apps.size === 0) {
    problems.push(
      'apps.<app_code>.tencent_im: tencent_im.enabled is true but no app has Tencent IM credentials (sdk_app_id, secret_key from the environment); add ' +
        'them to each app Tencent serves, or turn tencent_im off',
    );
  }
  const ids = new Map<number, string>();
  for (const app of apps.values()) {
    const other = ids.get(app.sdkAppId);
    if (other !== undefined) problems.push(`apps.${app.appCode}.tencent_im.sdk_app_id: ${app.sdkAppId} is also ${other}'s; one Tencent app per app_code`);
    ids.set(app.sdkAppId, app.appCode);
  }
  return problems;
}
