type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Lifts the app keys that lived in the tencent_im block before the core `apps` list into it, on a raw config:
 * `tencent_im.app_code` with `sdk_app_id` and `secret_key` becomes `apps.<app_code>` (keeping the deployment's Redis
 * prefix, `redis_tag: deployment`, so its keys and queues do not move), and `tencent_im.apps.<app_code>` becomes
 * `apps.<app_code>.tencent_im`. Pure apart from changing `raw`; says what moved and what is set twice.
 */
export function liftLegacyTencentApps(raw: Raw): { deprecated: string[]; problems: Array<{ path: string[]; message: string }> } {
  const im = raw.tencent_im;
  const deprecated: string[] = [];
  const problems: Array<{ path: string[]; message: string }> = [];
  if (!isObject(im)) return { deprecated, problems };
  const apps: Raw = isObject(raw.apps) ? raw.apps : {};
  const place = (appCode: string, entry: Raw, from: string) => {
    const existing = apps[appCode];
    if (isObject(existing) && existing.tencent_im !== undefined) {
      problems.push({ path: ['apps', appCode, 'tencent_im'], message: `also set by ${from}; configure the app in one place (apps.${appCode})` });
      return;
    }
    apps[appCode] = { ...(isObject(existing) ? existing : {}), ...entry };
  };
  const { app_code: appCode, sdk_app_id: sdkAppId, secret_key: secretKey, apps: legacyApps } = im;
  if (appCode !== undefined) {
    if (typeof appCode !== 'string') {
      problems.push({ path: ['tencent_im', 'app_code'], message: 'must be an app_code such as "lalu"' });
    } else {
      const credentials =
        typeof secretKey === 'string' && secretKey !== '' ? { tencent_im: { sdk_app_id: sdkAppId ?? 1400000000, secret_key: secretKey } } : {};
      if (im.enabled === true && !('tencent_im' in credentials)) {
        problems.push({ path: ['tencent_im', 'secret_key'], message: 'required when tencent_im.enabled is true' });
      }
      place(appCode, { redis_tag: 'deployment', ...credentials }, 'tencent_im.app_code');
      deprecated.push(
        `tencent_im.app_code, sdk_app_id and secret_key are read as apps.${appCode} (redis_tag: deployment, tencent_im: { sdk_app_id, secret_key }); ` +
          `move them there`,
      );
    }
  } else if (sdkAppId !== undefined || (secretKey !== undefined && secretKey !== '')) {
    problems.push({
      path: ['tencent_im', 'secret_key'],
      message: 'tencent_im.sdk_app_id and secret_key belong to an app now: put them under apps.<app_code>.tencent_im',
    });
  }
  if (isObject(legacyApps)) {
    for (const [code, app] of Object.entries(legacyApps)) place(code, { tencent_im: app }, `tencent_im.apps.${code}`);
    if (Object.keys(legacyApps).length > 0) deprecated.push('tencent_im.apps.<app_code> is read as apps.<app_code>.tencent_im; move each app there');
  }
  for (const key of ['app_code', 'sdk_app_id', 'secret_key', 'apps']) delete im[key];
  if (Object.keys(apps).length > 0) raw.apps = apps;
  return { deprecated, problems };
}
