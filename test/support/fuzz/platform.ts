// The platform under fuzz: the test platform with small body and upload limits, so the
// requests just over them stay cheap to build and send.
import type { Config } from '../../../server/config.js';
import { startTestPlatform, type TestPlatform } from '../platform.js';
import type { FuzzContext } from './plan.js';

const LIMITS = { jsonBody: 64 * 1024, uploadFile: 32 * 1024, uploadFiles: 3 };

export interface FuzzTarget {
  platform: TestPlatform;
  context: FuzzContext;
  /** The database lacks pgvector: a declared 503 from search and grounding is then the expected answer. */
  dependenciesUnavailable: boolean;
}

export async function startFuzzTarget(overrides: Partial<Config> = {}): Promise<FuzzTarget> {
  const platform = await startTestPlatform({
    jsonBodyLimit: LIMITS.jsonBody,
    uploadFileLimit: LIMITS.uploadFile,
    uploadMaxFiles: LIMITS.uploadFiles,
    // Only what explains a 5xx is kept (looked up by trace id); per-request lines would pile up.
    logLevel: 'warn',
    ...overrides,
  });
  // startTestPlatform always starts on an empty database, so the bootstrap ran.
  const { organizationId, publisherId } = platform.bootstrap!;
  // A failing catalog is not this helper's to report: the campaign finds it on listModels.
  const catalog = await platform.api('/ai/v2/models');
  const models = catalog.ok ? ((await catalog.json()) as { data: { id: string }[] }).data : [];
  return {
    platform,
    context: {
      adminKey: platform.adminKey,
      knownIds: [organizationId, publisherId],
      knownModels: models.map((m) => m.id),
      idempotencyKeys: ['fuzz-key-1', 'fuzz-key-2', 'fuzz-key-3'],
      limits: LIMITS,
    },
    dependenciesUnavailable: !platform.services.database.capabilities.vector,
  };
}
