import type { AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const listGatewayDeployments = (async (_request, ctx) => ({
  status: 200,
  body: { data: ctx.services.inference.deployments(), meta: meta(ctx) },
})) satisfies AppHandler<'listGatewayDeployments'>;
