// One Provider per configured upstream endpoint, from the catalog's provider entries.
import { createAnthropicProvider } from '../providers/anthropic.js';
import type { Embedder } from '../providers/local/embedder.js';
import { createLocalProvider } from '../providers/local/local-provider.js';
import { createOpenAICompatibleProvider } from '../providers/openai-compatible.js';
import type { Provider } from '../providers/types.js';
import type { ProviderConfig } from './catalog.js';

export function createProvider(config: ProviderConfig, local: { embedder: Embedder }): Provider {
  switch (config.type) {
    case 'openai':
      return createOpenAICompatibleProvider({
        id: config.id,
        baseUrl: config.base_url!,
        apiKey: config.apiKey,
        headers: config.headers,
        ...(config.azure_api_version ? { azure: { apiVersion: config.azure_api_version } } : {}),
      });
    case 'anthropic':
      return createAnthropicProvider({ id: config.id, baseUrl: config.base_url!, apiKey: config.apiKey });
    case 'local':
      return createLocalProvider({ id: config.id, embedder: local.embedder });
  }
}
