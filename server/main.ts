// Process entry: `npm start`.
import { ConfigError, loadConfig } from './config.js';
import { CatalogError, loadCatalog } from './gateway/catalog.js';
import { createLogger } from './logging.js';
import { startPlatform } from './server.js';

async function main(): Promise<void> {
  let config;
  let catalog;
  try {
    config = loadConfig();
    catalog = loadCatalog();
  } catch (error) {
    if (error instanceof ConfigError || error instanceof CatalogError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  const platform = await startPlatform(config, logger, { catalog });
  const stop = async (signal: string) => {
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    await platform.close();
    logger.info('stopped');
    process.exit(0);
  };
  // Reloads GATEWAY_CONFIG; an invalid file is refused (its problems logged) and the running catalog kept.
  process.on('SIGHUP', () => platform.reloadGatewayConfig());
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((error) => {
  console.error('failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});
