// An organization's agents: named, versioned configurations of model choice, instructions
// and tradition.
import type { Agent, PrismaClient } from '../../generated/prisma/client.js';
import type { components } from '../../generated/types/openapi.js';
import { ApiError } from '../errors.js';
import { keysetQuery, toPage, type Page, type PageRequest } from '../storage/pagination.js';

export type AgentView = components['schemas']['Agent'];
export type AgentInput = components['schemas']['CreateAgentRequest'];
export type AgentChanges = components['schemas']['UpdateAgentRequest'];
type AgentModel = components['schemas']['AgentModel'];

export function viewAgent(agent: Agent): AgentView {
  return {
    id: agent.id,
    name: agent.name,
    description: agent.description,
    version: agent.version,
    status: agent.status as AgentView['status'],
    tags: agent.tags,
    model: agent.model as AgentModel,
    instructions: agent.instructions,
    tradition: agent.tradition as AgentView['tradition'],
    createdAt: agent.createdAt.getTime(),
    updatedAt: agent.updatedAt.getTime(),
  };
}

/** The model choice must name what its mode needs, and nothing the mode ignores. */
function checkModel(model: AgentModel | undefined, loc: string[]): void {
  if (!model) return;
  const problem =
    model.mode === 'model' && !model.model
      ? 'mode "model" needs `model`'
      : model.mode === 'model_family' && !model.model_family
        ? 'mode "model_family" needs `model_family`'
        : model.mode === 'auto_routing' && (model.model || model.model_family)
          ? 'mode "auto_routing" takes neither `model` nor `model_family`'
          : null;
  if (problem) {
    throw new ApiError('VALIDATION_ERROR', `Invalid model choice: ${problem}`, {
      gatewayCode: 'validation_error',
      issues: [{ loc, msg: problem, type: 'value_error', input: model }],
    });
  }
}

/**
 * The model choice as stored: its declared fields only. The request schema is open, and a
 * field the caller added would otherwise be kept and sent back on every read.
 */
function modelChoice(model: AgentModel): AgentModel {
  return { mode: model.mode, ...(model.model !== undefined && { model: model.model }), ...(model.model_family !== undefined && { model_family: model.model_family }) };
}

export class AgentService {
  constructor(private readonly prisma: PrismaClient) {}

  async create(organizationId: string, input: AgentInput): Promise<AgentView> {
    checkModel(input.model, ['body', 'model']);
    const agent = await this.prisma.agent.create({
      data: {
        organizationId,
        name: input.name,
        description: input.description ?? null,
        status: input.status ?? 'active',
        tags: input.tags ?? [],
        model: input.model ? modelChoice(input.model) : { mode: 'auto_routing' },
        instructions: input.instructions ?? null,
        tradition: input.tradition ?? null,
      },
    });
    return viewAgent(agent);
  }

  async list(organizationId: string, page: PageRequest): Promise<Page<AgentView>> {
    const query = keysetQuery(page);
    const rows = await this.prisma.agent.findMany({ ...query, where: { organizationId, ...query.where } });
    const result = toPage(rows, page.limit);
    return { ...result, items: result.items.map(viewAgent) };
  }

  async get(organizationId: string, id: string): Promise<AgentView> {
    return viewAgent(await this.find(organizationId, id));
  }

  async update(organizationId: string, id: string, changes: AgentChanges): Promise<AgentView> {
    checkModel(changes.model, ['body', 'model']);
    await this.find(organizationId, id);
    const data = {
      ...(changes.name !== undefined && { name: changes.name }),
      ...(changes.description !== undefined && { description: changes.description }),
      ...(changes.status !== undefined && { status: changes.status }),
      ...(changes.tags !== undefined && { tags: changes.tags }),
      ...(changes.model !== undefined && { model: modelChoice(changes.model) }),
      ...(changes.instructions !== undefined && { instructions: changes.instructions }),
      ...(changes.tradition !== undefined && { tradition: changes.tradition }),
      version: { increment: 1 },
    };
    const agent = await this.prisma.agent.update({ where: { id }, data }).catch(notFoundIfGone(id));
    return viewAgent(agent);
  }

  async delete(organizationId: string, id: string): Promise<void> {
    await this.find(organizationId, id);
    await this.prisma.agent.delete({ where: { id } }).catch(notFoundIfGone(id));
  }

  private async find(organizationId: string, id: string): Promise<Agent> {
    const agent = await this.prisma.agent.findFirst({ where: { id, organizationId } });
    if (!agent) throw agentNotFound(id);
    return agent;
  }
}

const agentNotFound = (id: string) => new ApiError('NOT_FOUND', `No agent ${id}`, { gatewayCode: 'not_found' });

/** Deleted by a concurrent request between the ownership check and the write (Prisma P2025). */
function notFoundIfGone(id: string) {
  return (error: unknown): never => {
    throw (error as { code?: string }).code === 'P2025' ? agentNotFound(id) : error;
  };
}
