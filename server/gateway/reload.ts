// Reloading GATEWAY_CONFIG without a restart (SIGHUP, main.ts): the file is read and
// validated as at start; an invalid one is refused with every problem in the log and the
// running catalog kept; a valid one routes the requests that start after it, while those in
// flight finish on the catalog they started with (their plan names it: gateway-service.ts).
// Without GATEWAY_CONFIG the built-in default is built again (its environment may differ).
import type { Logger } from 'pino';
import { CatalogError, loadCatalog } from './catalog.js';
import type { Inference } from './index.js';

export type ReloadOutcome = { ok: true; models: number } | { ok: false; problems: string[] };

export function reloadGatewayConfig(inference: Inference, env: NodeJS.ProcessEnv, logger: Logger): ReloadOutcome {
  const source = env.GATEWAY_CONFIG ?? 'built-in default';
  let catalog;
  try {
    catalog = loadCatalog(env);
  } catch (error) {
    if (!(error instanceof CatalogError)) throw error;
    logger.error({ source, problems: error.problems }, `gateway configuration refused (${error.problems.length} problem(s)): the running catalog is kept\n${error.message}`);
    return { ok: false, problems: error.problems };
  }
  inference.reload(catalog);
  logger.info({ source, models: catalog.models.size, deployments: catalog.deployments.size }, 'gateway configuration reloaded: new requests use it, requests in flight finish on the previous one');
  return { ok: true, models: catalog.models.size };
}
