import { tencentImC2cModule } from './tencent-im-c2c/module.ts';
import { inboxModule } from './inbox/module.ts';
import { tencentPushModule } from './tencent-push/module.ts';

/** Every delivery channel, one line each: a new channel is a folder under src/channels/ and a line here. */
export const CHANNEL_MODULES = [tencentImC2cModule, inboxModule, tencentPushModule] as const;
