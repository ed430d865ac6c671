import type { TencentApp } from './apps.ts';
import type { TencentImConfig } from './config.ts';
import type { TencentRestOptions } from './rest.ts';
import { UserSigCache } from './usersig.ts';

/** How to reach one Tencent app's REST API as its admin: endpoint, identity, sockets and timeout, and its UserSig cache. */
export function appRest(app: TencentApp, im: TencentImConfig, call: { requestTimeoutMs: number; maxSockets: number }) {
  const options: TencentRestOptions = {
    baseUrl: app.baseUrl,
    sdkAppId: app.sdkAppId,
    adminIdentifier: app.adminIdentifier,
    requestTimeoutMs: call.requestTimeoutMs,
    idleSocketTimeoutMs: im.idle_socket_timeout,
    maxSockets: call.maxSockets,
  };
  return { options, userSig: new UserSigCache(app.sdkAppId, app.secretKey, app.adminIdentifier, im.usersig_ttl) };
}
