// The OpenAI embeddings surface over the gateway: checks the contract leaves to the server
// (embedding model, non-empty input, supported dimensions: 400; a model the key may not
// call: 403) and encodes the vectors.
import type { components } from '../../generated/types/openapi.js';
import { ApiError } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import { estimateTokens } from '../providers/local/tokens.js';
import type { CallScope, GatewayService } from './gateway-service.js';
import { notAllowed } from './routing.js';

type EmbeddingsRequest = components['schemas']['EmbeddingsRequest'];
type EmbeddingsResponse = components['schemas']['EmbeddingsResponse'];

export async function createEmbeddings(gateway: GatewayService, body: EmbeddingsRequest, scope: CallScope & { principal: Principal | null }): Promise<EmbeddingsResponse> {
  const model = gateway.catalog.models.get(body.model);
  if (!model || model.type !== 'embedding') {
    throw new ApiError('NOT_EMBEDDING_MODEL', `${body.model} is not an embedding model of the catalog (see GET /ai/v2/models).`, { param: 'model' });
  }
  if (scope.principal?.models && !scope.principal.models.allows(model)) {
    throw notAllowed(`model ${model.id}`, 'model');
  }
  const input = typeof body.input === 'string' ? [body.input] : body.input;
  if (input.length === 0 || input.some((text) => text.trim() === '')) {
    throw new ApiError('EMPTY_INPUT', 'input must be a non-empty string or a non-empty array of non-empty strings.', { param: 'input' });
  }
  const native = model.dimensions!;
  if (body.dimensions !== undefined && !(body.dimensions >= 1 && body.dimensions <= native && (model.shortenable || body.dimensions === native))) {
    throw new ApiError('UNSUPPORTED_DIMENSIONS', model.shortenable ? `${model.id} supports 1 to ${native} dimensions.` : `${model.id} supports only ${native} dimensions.`, { param: 'dimensions' });
  }
  const tooLong = input.findIndex((text) => estimateTokens(text) > model.context_window);
  if (tooLong >= 0) {
    throw new ApiError('CONTEXT_WINDOW_EXCEEDED', `input[${tooLong}] exceeds the ${model.context_window}-token input limit of ${model.id}.`, { param: 'input' });
  }
  const { result, served } = await gateway.embed(model.id, input, body.dimensions, scope);
  const base64 = body.encoding_format === 'base64';
  return {
    object: 'list',
    data: result.vectors.map((vector, index) => ({ object: 'embedding', index, embedding: base64 ? toBase64(vector) : vector })),
    model: served.model.id,
    usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
  };
}

/** OpenAI's base64 encoding: little-endian float32, whatever the machine's byte order. */
function toBase64(vector: number[]): string {
  const view = new DataView(new ArrayBuffer(vector.length * 4));
  vector.forEach((value, i) => view.setFloat32(i * 4, value, true));
  return Buffer.from(view.buffer).toString('base64');
}
