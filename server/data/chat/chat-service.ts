// Chat API v1 (deprecated): chats kept per organization. A message is a question grounded
// on the organization's publishers (all of them, or those named), answered through the
// guarded completion path like the v2 grounded completions, and stored with its answer.
// Each stored message knows its question (`query_id`), so the history lists questions
// (`role: user`) and answers (`role: kallm`) in order, as the public samples read them.
import type { components } from '../../../generated/types/openapi.js';
import type { Message, PrismaClient } from '../../../generated/prisma/client.js';
import { randomUUID } from 'node:crypto';
import { ApiError } from '../../errors.js';
import type { ChatCompletionBody, ChatCompletions, CompletionContext } from '../../gateway/chat-completions.js';
import type { Principal } from '../../identity/principal.js';
import type { ChatMessage } from '../../providers/types.js';
import { conversationContext } from '../grounding/conversation.js';
import { GROUNDING_DEFAULTS } from '../grounding/grounded-completions.js';
import { groundingMessage } from '../grounding/prompt.js';
import type { Source, Sources } from '../grounding/sources.js';
import { clip } from './clip.js';

type Schemas = components['schemas'];
type SendRequest = Schemas['ChatMessageRequest'];
type SendResult = Schemas['ChatMessageResponse'];
type History = Schemas['ChatHistory'];
type HistoryEntry = Schemas['ChatHistoryEntry'];

/** Earlier messages of the chat given to the model as context. */
const HISTORY_CONTEXT = 10;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class ChatService {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly sources: Sources,
    private readonly completions: ChatCompletions,
  ) {}

  async send(principal: Principal, request: SendRequest, ctx: CompletionContext): Promise<SendResult> {
    const askedAt = new Date();
    const query = request.query.trim();
    if (!query) throw new ApiError('INVALID_REQUEST', 'query must not be empty.');
    const chat = request.chat_id ? await this.chatOf(principal, request.chat_id, () => new ApiError('INVALID_REQUEST', `No chat ${request.chat_id}.`)) : null;
    const publishers = await this.publishers(principal, request.publishers);
    const earlier = chat ? await this.context(chat.id) : [];
    const conversation: ChatMessage[] = [...earlier, { role: 'user', content: query }];
    const limit = request.character_limit;
    // About 3 characters per token, so the model can fill the limit; the text is clipped to it.
    const settings = { auto_routing: true, stream: false, ...(limit ? { max_tokens: Math.ceil(limit / 3) } : {}) };
    // What the completion would refuse (the input guardrails) is refused before retrieval.
    await this.completions.precheck({ ...settings, messages: conversation } as ChatCompletionBody, ctx);
    const sources = await this.sources.find(
      {
        organizationId: principal.organizationId,
        publisherIds: publishers.map((p) => p.id),
        query,
        context: conversationContext(conversation),
        limit: request.sources_limit ?? GROUNDING_DEFAULTS.sources_limit,
        certainty: GROUNDING_DEFAULTS.certainty,
      },
      ctx,
    );
    const messages: ChatMessage[] = [
      groundingMessage(sources, { publisher: publishers.map((p) => p.name).join(', ') || 'your organization', cite: false }),
      ...(limit ? [{ role: 'system' as const, content: `Keep the answer under ${limit} characters.` }] : []),
      ...conversation,
    ];
    const body = { ...settings, messages };
    const answer = await this.completions.create(body as ChatCompletionBody, ctx, { inputChecked: true });
    if (answer.kind !== 'json') throw new Error('a Chat API answer is never streamed');
    const content = answer.body.choices[0]?.message.content ?? '';
    const text = limit ? clip(content, limit) : content;

    const queryId = randomUUID();
    const answeredAt = new Date(Math.max(Date.now(), askedAt.getTime() + 1));
    const stored = await this.prisma.$transaction(async (tx) => {
      const chatId = chat?.id ?? (await tx.chat.create({ data: { organizationId: principal.organizationId, apiKeyId: apiKeyOf(principal) } })).id;
      await tx.message.create({ data: { id: queryId, queryId, chatId, role: 'user', content: query, createdAt: askedAt } });
      const reply = await tx.message.create({ data: { queryId, chatId, role: 'assistant', content: text, sources: sources, createdAt: answeredAt } });
      return { chatId, reply };
    });
    return {
      chat_id: stored.chatId,
      query_id: queryId,
      message_id: stored.reply.id,
      message: text,
      sources: sources.map(chatSource),
      timestamp: answeredAt.toISOString(),
      success: true,
    };
  }

  /** The earlier messages the next message in this chat is sent with (none for a chat that is not the organization's). */
  async contextOf(organizationId: string, chatId: string): Promise<ChatMessage[]> {
    const chat = UUID.test(chatId) ? await this.prisma.chat.findUnique({ where: { id: chatId }, select: { organizationId: true } }) : null;
    return chat?.organizationId === organizationId ? this.context(chatId) : [];
  }

  /** The chat's messages, oldest first; a chat that does not exist or is not the caller's is 404. */
  async history(principal: Principal, chatId: string): Promise<History> {
    const chat = await this.chatOf(principal, chatId, () => new ApiError('NOT_FOUND', 'Failed to find chat'));
    const rows = await this.prisma.message.findMany({ where: { chatId: chat.id }, orderBy: [{ createdAt: 'asc' }, { role: 'desc' }] });
    const questions = new Map(rows.filter((m) => m.role === 'user').map((m) => [m.id, m.content]));
    return {
      chat_id: chat.id,
      created_at: chat.createdAt.toISOString(),
      messages: rows.filter((m) => m.deletedAt === null).map((m) => historyEntry(m, questions)),
    };
  }

  /** Deletes one message of the caller's organization; else 404 `Failed to find message`. */
  async deleteMessage(principal: Principal, messageId: string): Promise<{ deleted: true; message_id: string }> {
    const notFound = new ApiError('NOT_FOUND', 'Failed to find message');
    if (!UUID.test(messageId)) throw notFound;
    const { count } = await this.prisma.message.updateMany({
      where: { id: messageId, deletedAt: null, chat: { organizationId: principal.organizationId } },
      data: { deletedAt: new Date() },
    });
    if (count === 0) throw notFound;
    return { deleted: true, message_id: messageId };
  }

  private async chatOf(principal: Principal, chatId: string, missing: () => ApiError) {
    const chat = UUID.test(chatId) ? await this.prisma.chat.findUnique({ where: { id: chatId } }) : null;
    // Another organization's chat is answered as missing: its existence is not the caller's to know.
    if (!chat || chat.organizationId !== principal.organizationId) throw missing();
    return chat;
  }

  /** The named publishers (each must be the caller's), or all of the organization's. */
  private async publishers(principal: Principal, names: string[] | undefined) {
    if (!names?.length) return this.prisma.publisher.findMany({ where: { organizationId: principal.organizationId }, orderBy: { name: 'asc' } });
    return this.sources.publishersNamed(principal, names);
  }

  /** The last exchanges of the chat, as conversation messages. */
  private async context(chatId: string): Promise<ChatMessage[]> {
    const rows = await this.prisma.message.findMany({
      where: { chatId, deletedAt: null },
      orderBy: [{ createdAt: 'desc' }, { role: 'asc' }],
      take: HISTORY_CONTEXT,
    });
    return rows.reverse().map((m) => ({ role: m.role === 'user' ? 'user' : 'assistant', content: m.content }));
  }
}

function apiKeyOf(principal: Principal): string | null {
  return principal.kind === 'api_key' ? principal.credentialId : null;
}

function chatSource(source: Source): Schemas['ChatSource'] {
  return { item_id: source.item_id, title: source.title, publisher: source.publisher, url: source.url, snippet: source.snippet };
}

function historyEntry(message: Message, questions: Map<string, string>): HistoryEntry {
  const user = message.role === 'user';
  const sent = message.createdAt.toISOString();
  return {
    role: user ? 'user' : 'kallm',
    query_id: message.queryId ?? message.id,
    message_id: message.id,
    query: user ? message.content : (questions.get(message.queryId ?? '') ?? ''),
    message: message.content,
    sources: user ? [] : ((message.sources as Source[]) ?? []).map(chatSource),
    timestamp: sent,
    created_at: sent,
  };
}
