// What a grounded turn retrieves for: its last user message, read with the exchange before
// it. A follow-up ("and how do I undo that?", "is there a size limit on the message?") names
// little of what it asks about; the question before it and the answer it follows do. They go
// to retrieval as context, weighted below the question itself (search/pg-retriever.ts).
import type { ChatMessage } from '../../providers/types.js';

/** An earlier answer is read up to here: its opening names the subject, the rest dilutes it. */
const ANSWER_CHARS = 400;

function textOf(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content.trim();
  return (message.content ?? [])
    .flatMap((part) => (part.type === 'text' ? [part.text] : []))
    .join('\n')
    .trim();
}

/** The text of the last user message: what retrieval looks for. */
export function lastUserText(messages: readonly ChatMessage[]): string {
  const last = messages.findLast((m) => m.role === 'user');
  return last ? textOf(last) : '';
}

/**
 * The turns before the last user message that retrieval reads as its context, oldest first:
 * the user's previous question and the answer given to it (its opening), when there are any.
 */
export function conversationContext(messages: readonly ChatMessage[]): string[] {
  const last = messages.findLastIndex((m) => m.role === 'user');
  if (last <= 0) return [];
  const earlier = messages.slice(0, last);
  const question = earlier.findLast((m) => m.role === 'user');
  const answer = earlier.findLast((m) => m.role === 'assistant');
  const answerText = answer && earlier.indexOf(answer) > (question ? earlier.indexOf(question) : -1) ? textOf(answer).slice(0, ANSWER_CHARS) : '';
  return [question ? textOf(question) : '', answerText].filter(Boolean);
}
