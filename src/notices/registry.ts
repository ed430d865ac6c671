import { walletModule } from './wallet/module.ts';
import { roomModule } from './room/module.ts';
import { activityModule } from './activity/module.ts';

/** Every outbox-fed source, one line each: a new source is a folder under src/notices/ and a line here. */
export const SOURCE_MODULES = [walletModule, roomModule, activityModule] as const;
