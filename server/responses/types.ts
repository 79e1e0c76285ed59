// The Responses API's shapes, as the contract (openapi.yaml) declares them.
import type { components } from '../../generated/types/openapi.js';

type Schemas = components['schemas'];
export type ResponseBody = Schemas['CreateResponseRequest'];
export type GroundedResponseBody = Schemas['GroundedResponseRequest'];
export type ResponseObject = Schemas['Response'];
export type GroundedResponseObject = Schemas['GroundedResponse'];
export type InputItem = Schemas['ResponseInputItem'];
export type InputContent = Schemas['ResponseInputContent'];
export type OutputItem = Schemas['ResponseOutputItem'];
export type OutputMessage = Schemas['ResponseOutputMessage'];
export type OutputContent = Schemas['ResponseOutputContent'];
export type ResponseTool = Schemas['ResponseTool'];
export type ImageGenerationTool = Schemas['ResponseImageGenerationTool'];
export type StreamEvent = Schemas['ResponseStreamEvent'];
export type GroundedStreamEvent = Schemas['GroundedResponseStreamEvent'];
export type AIErrorObject = Schemas['AIErrorObject'];
export type Usage = Schemas['ResponseUsage'];
