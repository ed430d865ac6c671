import { CHANNEL_MODULES } from '../../src/channels/registry.ts';
import { channelContract } from './conformance.ts';

// Every registered channel, each through the probe its module ships (a module without one fails to build).
channelContract(CHANNEL_MODULES);
