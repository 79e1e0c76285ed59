// Boots the whole platform in-process on an in-memory database, for end-to-end tests.
import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../server/config.js';
import { buildCatalog, defaultConfig } from '../../server/gateway/catalog.js';
import { createLogger } from '../../server/logging.js';
import { startPlatform, type PlatformOptions, type RunningPlatform } from '../../server/server.js';

export interface TestPlatform extends RunningPlatform {
  adminKey: string;
  /** Every log line the platform wrote, as text. */
  logs: string[];
  api(path: string, init?: RequestInit & { key?: string | null }): Promise<Response>;
  mgmt(path: string, init?: RequestInit & { key?: string | null }): Promise<Response>;
}

/**
 * `adminKey`: for a database that is already bootstrapped (a second instance, a restart),
 * the admin key its first start printed.
 */
export async function startTestPlatform(
  overrides: Partial<Config> = {},
  options: PlatformOptions = {},
  existing: { adminKey?: string } = {},
): Promise<TestPlatform> {
  const config: Config = {
    ...loadConfig({}),
    port: 0,
    mgmtPort: 0,
    dataDir: 'memory://',
    validateResponses: true,
    bootstrapAdminKey: false,
    logLevel: 'debug',
    // Most tests never embed with the local model: they do not load it (a test of warming turns it on).
    localEmbedderWarm: false,
    ...overrides,
  };
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  // The built-in catalog of a machine with no upstream keys, whatever this machine's environment holds.
  const catalog = options.catalog ?? buildCatalog(defaultConfig({}), 'test default', {});
  const platform = await startPlatform(config, createLogger(config.logLevel, sink), { ...options, catalog });
  const adminKey = platform.bootstrap?.adminKey ?? existing.adminKey;
  if (!adminKey) {
    await platform.close();
    throw new Error('the database was bootstrapped before: pass the adminKey its first start printed');
  }
  const caller =
    (base: string) =>
    (path: string, init: RequestInit & { key?: string | null } = {}) => {
      const { key = adminKey, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${key}`);
      if (typeof rest.body === 'string' && !headers.has('content-type')) headers.set('content-type', 'application/json');
      return fetch(`${base}${path}`, { ...rest, headers });
    };
  return { ...platform, adminKey, logs, api: caller(platform.apiUrl), mgmt: caller(platform.mgmtUrl) };
}

/** The log lines of one answer, found by its trace id once its request line (written at the end) is in. */
export async function logLinesOf(platform: TestPlatform, res: Response): Promise<string[]> {
  await res.arrayBuffer();
  const traceId = res.headers.get('x-trace-id')!;
  const find = () => platform.logs.filter((line) => line.includes(traceId));
  for (let i = 0; i < 50 && !find().some((line) => line.includes('"msg":"request ')); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return find();
}
