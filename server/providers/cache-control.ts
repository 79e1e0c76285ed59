// Prompt-cache breakpoints (`cache_control`) as the adapters treat them: Anthropic's wire
// format carries them, OpenAI-compatible upstreams refuse or ignore them (OpenAI caches a
// repeated prefix by itself), so they are taken out for those.
import type { ChatMessage } from './types.js';

export function hasCacheControl(message: ChatMessage): boolean {
  return message.cache_control !== undefined || (Array.isArray(message.content) && message.content.some((part) => part.cache_control !== undefined));
}

/** The message without its breakpoints (itself when it has none). */
export function withoutCacheControl(message: ChatMessage): ChatMessage {
  if (!hasCacheControl(message)) return message;
  const { cache_control: _dropped, ...rest } = message;
  return Array.isArray(rest.content) ? { ...rest, content: rest.content.map(({ cache_control: _part, ...part }) => part) } : rest;
}
