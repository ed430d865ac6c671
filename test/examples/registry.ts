import type { ModuleSet } from '../../src/modules/module-set.ts';
import { CHANNEL_MODULES } from '../../src/channels/registry.ts';
import { SOURCE_MODULES } from '../../src/notices/registry.ts';
import { webhookModule } from './channels/webhook/module.ts';
import { giftModule } from './sources/gift/module.ts';

/** The registries plus the examples: each example is its folder and its one line here. */
export const EXAMPLE_MODULES: ModuleSet = {
  channels: [...CHANNEL_MODULES, webhookModule],
  sources: [...SOURCE_MODULES, giftModule],
};
