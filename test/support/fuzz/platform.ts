// The platform under fuzz: the test platform with small body and upload limits, so the
// requests just over them stay cheap to build and send, and a few of everything a request
// can name (agents, keys, items, a file, chats, an OAuth client), so valid requests reach
// the handlers' happy paths.
import type { Config } from '../../../server/config.js';
import { startTestPlatform, type TestPlatform } from '../platform.js';
import { failedItemWithFile } from '../content.js';
import type { FuzzContext } from './plan.js';
import { OVER_PARAMETER_LIMIT } from './values.js';

/**
 * The JSON limit takes an array just over the database's bind-parameter limit (32,768 small
 * items): a huge array must reach validation and the handler, not stop at 413.
 */
export const FUZZ_LIMITS = { jsonBody: OVER_PARAMETER_LIMIT * 40, uploadFile: 32 * 1024, uploadFiles: 3 };

/** Of each resource a DELETE operation destroys, how many the campaign gets. */
const DISPOSABLE = 3;

export interface FuzzTarget {
  platform: TestPlatform;
  context: FuzzContext;
  /** The database lacks pgvector: a declared 503 from search and grounding is then the expected answer. */
  dependenciesUnavailable: boolean;
}

/** The answer's body, or a readable failure: fixtures the campaign relies on must exist. */
async function created<T>(label: string, answer: Promise<Response>): Promise<T> {
  const res = await answer;
  if (!res.ok) throw new Error(`fuzz fixture ${label}: ${res.status} ${(await res.text()).slice(0, 300)}`);
  return (await res.json()) as T;
}

const times = <T>(n: number, make: () => Promise<T>): Promise<T[]> => Promise.all(Array.from({ length: n }, make));

/**
 * Resources that valid requests name, made through the API as a client would. Chats and
 * indexed documents need pgvector: without it (`vector` false) there are none.
 */
async function fixtures(platform: TestPlatform, publisherId: string, vector: boolean) {
  const searchable = vector ? 1 + DISPOSABLE : 0;
  const post = (body: object) => ({ method: 'POST', body: JSON.stringify(body) });
  let documents = 0;
  const upload = new FormData();
  upload.set('publisher_id', publisherId);
  upload.append('files', new Blob(['Grace and peace to you.'], { type: 'text/plain' }), 'grace.txt');
  const org = await platform.services.identity.organizations.findOrganization('default');
  const [agents, keys, items, chats, file, client] = await Promise.all([
    times(1 + DISPOSABLE, () => created<{ data: { id: string } }>('agent', platform.mgmt('/api/v1/agents', post({ name: 'fuzz agent' })))),
    times(1 + DISPOSABLE, () => created<{ data: { id: string } }>('key', platform.mgmt('/api/v1/keys', post({ scopes: ['inference'] })))),
    times(searchable, () =>
      created<{ item_id: string }>(
        'item',
        platform.api('/ingestion/v1/real_time_upload', post({ content: `# Rest ${++documents}\n\nRest is a gift, not a reward.`, publisherId, item_title: 'Rest', producer_id: `fuzz-${documents}` })),
      ),
    ),
    times(searchable, () => created<{ chat_id: string; message_id: string }>('chat', platform.api('/ai/v1/message', post({ query: 'What is rest?' })))),
    created<{ ingesting: string[] }>('file', platform.api('/ingestion/v2/files', { method: 'POST', body: upload })),
    platform.services.identity.oauth.createClient(org.id, ['inference']),
    // Loads the local embedding model now: its first load can outlast a request's timeout on a busy machine.
    created('embedding', platform.api('/ai/v2/direct/embeddings', post({ model: 'local-embedding', input: 'warm up' }))),
  ]);
  // A failed item still holding its file: what retryIngestion can queue again.
  const failed = await failedItemWithFile(platform, publisherId, 'outage.txt', 'embedding: upstream unavailable', 'Grace and peace, once more.');
  return {
    agents: agents.map((a) => a.data.id),
    keys: keys.map((k) => k.data.id),
    // The file's item first (getFile needs it), then the failed one, the others are documents.
    items: [file.ingesting[0], failed.id, ...items.map((i) => i.item_id)],
    producers: items.map((_, i) => `fuzz-${i + 1}`),
    chats,
    client,
  };
}

export async function startFuzzTarget(overrides: Partial<Config> = {}): Promise<FuzzTarget> {
  const platform = await startTestPlatform({
    jsonBodyLimit: FUZZ_LIMITS.jsonBody,
    uploadFileLimit: FUZZ_LIMITS.uploadFile,
    uploadMaxFiles: FUZZ_LIMITS.uploadFiles,
    // Only what explains a 5xx is kept (looked up by trace id); per-request lines would pile up.
    logLevel: 'warn',
    ...overrides,
  });
  // startTestPlatform always starts on an empty database, so the bootstrap ran.
  const { organizationId, publisherId } = platform.bootstrap!;
  // A failing catalog is not this helper's to report: the campaign finds it on listModels.
  const catalog = await platform.api('/ai/v2/models');
  const models = catalog.ok ? ((await catalog.json()) as { data: { id: string; family: string }[] }).data : [];
  const vector = platform.services.database.capabilities.vector;
  const made = await fixtures(platform, publisherId, vector);
  const publisherNames = ['default'];
  return {
    platform,
    context: {
      adminKey: platform.adminKey,
      knownIds: [organizationId, publisherId],
      known: {
        model: models.map((m) => m.id),
        model_family: [...new Set(models.map((m) => m.family))],
        collection: [platform.services.config.searchCollection],
        tenant: publisherNames,
        publisher: publisherNames,
        rag_publisher: publisherNames,
        publishers: publisherNames,
        publisher_id: [publisherId],
        publisherId: [publisherId],
        agent_id: made.agents.slice(0, 1),
        key_id: made.keys.slice(0, 1),
        item_id: made.items.slice(0, 3),
        item_ids: made.items.slice(0, 3),
        producer_id: made.producers.slice(0, 1),
        producer_ids: made.producers.slice(0, 1),
        chat_id: made.chats.map((c) => c.chat_id),
        message_id: made.chats.slice(0, 1).map((c) => c.message_id),
        client_id: [made.client.clientId],
        client_secret: [made.client.clientSecret],
      },
      disposable: {
        agent_id: made.agents.slice(1),
        key_id: made.keys.slice(1),
        item_ids: made.items.slice(2),
        message_id: made.chats.slice(1).map((c) => c.message_id),
      },
      idempotencyKeys: ['fuzz-key-1', 'fuzz-key-2', 'fuzz-key-3'],
      limits: FUZZ_LIMITS,
    },
    dependenciesUnavailable: !vector,
  };
}
