import type { NoticeConfig } from './schema.ts';
import { appRedisPrefix } from './redis-keyspace.ts';

/** One app as the Tencent channels use it: every default filled in. */
export interface TencentApp {
  appCode: string;
  sdkAppId: number;
  secretKey: string;
  adminIdentifier: string;
  baseUrl: string;
  rateLimitPerSecond: number;
  pushRateLimitPerSecond: number;
  /**
   * The prefix of its Redis keys (pacers among them): the shorthand app (tencent_im.app_code) keeps the deployment's
   * prefix, so a single-app deployment's keys never move; every app of tencent_im.apps has a hash tag of its own.
   */
  redisPrefix: string;
}

/**
 * The apps this deployment serves, by app_code: `tencent_im.apps`, plus the single-app shorthand (`tencent_im.app_code`
 * with the top-level sdk_app_id and secret_key). Shared values (admin identifier, base URL, rates) are defaults.
 */
export function tencentApps(config: NoticeConfig): Map<string, TencentApp> {
  const im = config.tencent_im;
  const apps = new Map<string, TencentApp>();
  const defaults = {
    adminIdentifier: im.admin_identifier,
    baseUrl: im.base_url,
    rateLimitPerSecond: im.rate_limit_per_second,
    pushRateLimitPerSecond: config.tencent_push.rate_limit_per_second,
  };
  if (im.app_code !== undefined)
    apps.set(im.app_code, { appCode: im.app_code, sdkAppId: im.sdk_app_id, secretKey: im.secret_key, ...defaults, redisPrefix: config.redis.prefix });
  for (const [appCode, app] of Object.entries(im.apps)) {
    apps.set(appCode, {
      appCode,
      sdkAppId: app.sdk_app_id,
      secretKey: app.secret_key,
      adminIdentifier: app.admin_identifier ?? defaults.adminIdentifier,
      baseUrl: app.base_url ?? defaults.baseUrl,
      rateLimitPerSecond: app.rate_limit_per_second ?? defaults.rateLimitPerSecond,
      pushRateLimitPerSecond: app.push_rate_limit_per_second ?? defaults.pushRateLimitPerSecond,
      redisPrefix: appRedisPrefix(config.redis.prefix, appCode),
    });
  }
  return apps;
}

/** Why this config names no app or names one twice, or null. */
export function appsProblems(config: NoticeConfig): string[] {
  const im = config.tencent_im;
  const problems: string[] = [];
  if (im.app_code === undefined && Object.keys(im.apps).length === 0) {
    problems.push(
      'tencent_im.app_code: required — say which app_code tencent_im.sdk_app_id serves (app_code: lalu), or list each app under tencent_im.apps; a fact of an app not named is never sent',
    );
  }
  if (im.app_code !== undefined && Object.hasOwn(im.apps, im.app_code)) {
    problems.push(`tencent_im.apps.${im.app_code}: also named by tencent_im.app_code; configure it in one place`);
  }
  if (im.app_code !== undefined && im.enabled && im.secret_key === '') problems.push('tencent_im.secret_key: required when tencent_im.enabled is true');
  const ids = new Map<number, string>();
  for (const app of tencentApps(config).values()) {
    const other = ids.get(app.sdkAppId);
    if (other !== undefined) problems.push(`tencent_im.apps.${app.appCode}.sdk_app_id: ${app.sdkAppId} is also ${other}'s; one Tencent app per app_code`);
    ids.set(app.sdkAppId, app.appCode);
  }
  return problems;
}
