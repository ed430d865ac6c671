/**
 * The import graph's rules, checked in CI (`npm run lint:deps`), type-only imports included. The floors, lowest
 * first; a file imports its own floor or lower (docs/decisions/0012-import-floors.md says why each file sits where).
 */
const FLOORS = [
  { name: 'platform', path: '^src/(platform|types)/' },
  {
    name: 'foundation',
    comment: 'core config shape, roles, metrics, the ledger, fact contracts, the Tencent REST client, pure quiet-hours math',
    path: '^src/(config|app|observability|ledger|facts|tencent-im|fake-im)/|^src/quiet-hours/window[.]ts$',
  },
  { name: 'contracts', comment: 'what a channel and a source module are', path: '^src/(channels/types|notices/types|channels/per-app)[.]ts$|^src/modules/' },
  {
    name: 'features',
    comment: 'the delivery core, intake paths, user settings, revocation, digests, the queue contract',
    path: '^src/(intake|outbox|rocketmq|revoke|digests|preferences|delivery)/|^src/quiet-hours/(?!window[.]ts$)|^queues/',
  },
  {
    name: 'modules',
    comment: 'each channel and source folder, and the helpers over the module set',
    path: '^src/(channels|notices)/(?!(types|per-app|registry)[.]ts$)',
  },
  {
    name: 'composition',
    comment: 'the registries, the composition root, operator tools, migrations',
    path: '^src/(composition/|channels/registry[.]ts|notices/registry[.]ts|ops/|db/)',
  },
  { name: 'processes', path: '^(ingest|deliver|dashboard|cli)/' },
];

// The floors' paths are disjoint, so a file is on exactly one.
const upward = FLOORS.slice(0, -1).map((floor, i) => ({
  name: `no-upward-from-${floor.name}`,
  severity: 'error',
  comment: `${floor.name} must not import a higher floor (${FLOORS.slice(i + 1)
    .map((f) => f.name)
    .join(', ')})`,
  from: { path: floor.path },
  to: { path: FLOORS.slice(i + 1).map((f) => f.path) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes every file in it load and change together (issue 46: one cycle ran through 51 files).',
      from: {},
      to: { circular: true },
    },
    ...upward,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|\\.tmp|dist)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
