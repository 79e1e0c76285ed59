// `listModels`: the catalog as configured, in OpenAI's list shape plus catalog facts.
import type { components } from '../../generated/types/openapi.js';
import type { Catalog } from './catalog.js';

type ModelList = components['schemas']['ModelList'];

export function modelList(catalog: Catalog, created: number): ModelList {
  return {
    object: 'list',
    data: [...catalog.models.values()].map((model) => ({
      id: model.id,
      object: 'model',
      created,
      owned_by: model.family === 'local' ? 'platform' : model.family,
      family: model.family,
      provider: catalog.deployments.get(model.deployments[0])!.provider,
      context_window: model.context_window,
      max_output_tokens: model.type === 'chat' ? model.max_output_tokens : null,
      capabilities: { ...model.capabilities, embeddings: model.type === 'embedding' },
      // The public platform's flat names for two of the capabilities.
      supports_tools: model.capabilities.tools,
      supports_reasoning: model.capabilities.reasoning,
      pricing: { ...model.pricing, currency: 'USD' },
      is_deprecated: model.deprecated,
      type: model.type,
    })),
  };
}
