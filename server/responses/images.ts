// The `image_generation` tool: the model asked for an image by calling it with a prompt;
// the deployment that answered draws it (GatewayService.generateImage) and the caller gets
// an `image_generation_call` output item with the image in base64.
import type { CallScope, GatewayService, Served } from '../gateway/gateway-service.js';
import type { ToolCall } from '../providers/types.js';
import { newId } from './output.js';
import type { ImageGenerationTool, OutputItem } from './types.js';

type ImageCall = Extract<OutputItem, { type: 'image_generation_call' }>;

export interface ImageRun {
  started(): ImageCall;
  done: Promise<ImageCall>;
}

/** One run per call, started one after the other (each is awaited before the next starts). */
export async function* drawImages(gateway: GatewayService, served: Served, tool: ImageGenerationTool, calls: ToolCall[], scope: CallScope): AsyncGenerator<ImageRun> {
  for (const call of calls) {
    const id = newId('ig');
    const done = gateway
      .generateImage(
        served,
        {
          prompt: promptOf(call),
          size: tool.size === 'auto' ? undefined : tool.size,
          quality: tool.quality === 'auto' ? undefined : tool.quality,
          outputFormat: tool.output_format,
        },
        scope,
      )
      .then((image): ImageCall => ({ type: 'image_generation_call', id, status: 'completed', result: image.base64 }));
    // Awaited by the consumer; marked handled so a failure is reported once, where it is awaited.
    done.catch(() => undefined);
    yield { started: () => ({ type: 'image_generation_call', id, status: 'in_progress', result: null }), done };
  }
}

/** The model's description of the image: the `prompt` argument, else the raw arguments text. */
function promptOf(call: ToolCall): string {
  try {
    const args = JSON.parse(call.function.arguments) as { prompt?: unknown };
    if (typeof args.prompt === 'string' && args.prompt.trim()) return args.prompt;
  } catch {
    // Not JSON: the text itself is the best description there is.
  }
  return call.function.arguments;
}
