// Resuming a broken stream on an upstream that cannot continue an assistant prefix (OpenAI
// itself, `prefix: none`, or one that refused the prefixed request with a 400): the partial
// answer is quoted in a user turn that asks for the rest of it. A model asked that way often
// repeats the last words, or all of it, before going on: the repeated part is trimmed. One
// that starts the answer over in other words does not join the text the client already has,
// and is refused like an upstream that refuses the prefix.
import { ProviderError, type ChatRequest, type ChatStreamEvent } from '../providers/types.js';

/** The request asking for the rest of `partial` in a user turn after the conversation. */
export function continuationRequest(request: ChatRequest, partial: string): ChatRequest {
  const ask =
    'Your answer to the conversation above was cut off. This is what you wrote so far, between the markers:\n' +
    `<<<\n${partial}\n>>>\n` +
    'Continue it exactly where it stops. Reply with the rest of the answer only: do not repeat what is already written, and add no introduction or comment.';
  return { ...request, messages: [...request.messages, { role: 'user', content: ask }] };
}

/** How far back in the partial answer a repeated passage is looked for (besides a repeat of all of it). */
const OVERLAP_WINDOW = 1_000;
/** At most this much of the answer's opening, repeated at the start of a continuation, means it started over. */
const RESTART_PROBE = 24;

/** How much of the answer's opening a continuation must repeat to count as starting over: half of it, at most RESTART_PROBE characters. */
export function restartProbe(partial: string): number {
  return Math.min(RESTART_PROBE, Math.ceil(partial.trim().length / 2));
}

/** Whether a continuation (its first `restartProbe` characters at least) starts the answer over. */
export function startsOver(partial: string, continuation: string): boolean {
  const probe = restartProbe(partial);
  const start = continuation.trimStart();
  return probe > 0 && start.length >= probe && partial.trimStart().startsWith(start.slice(0, probe));
}

/**
 * Reads a user-turn continuation until it shows how it joins `partial`: the events up to
 * then, with what repeated the end of the partial answer taken off. Throws
 * `prefix_refused` when it starts the answer over instead.
 */
export async function joinedContinuation(iterator: AsyncIterator<ChatStreamEvent>, partial: string): Promise<ChatStreamEvent[]> {
  const overlap = new Overlap(partial);
  const events: ChatStreamEvent[] = [];
  let text = '';
  let cut: number | undefined;
  while (cut === undefined) {
    const next = await iterator.next();
    if (next.done) {
      if (events.length === 0) throw new ProviderError('empty_stream', 'The upstream stream ended before its first event.');
      break;
    }
    events.push(next.value);
    // A finish, a tool call or a refusal: the text is all there is to judge.
    if (next.value.type !== 'delta' || next.value.content === undefined || next.value.toolCalls || next.value.refusal !== undefined) break;
    text += next.value.content;
    cut = overlap.decided(text);
  }
  cut ??= overlap.longest(text);
  if (cut < partial.length && startsOver(partial, text.slice(cut))) {
    throw new ProviderError('prefix_refused', 'The upstream started the answer over instead of continuing it.');
  }
  return trimContent(events, cut);
}

/** A repeat that starts inside a word counts from this length (a few matching letters are chance). */
const MID_WORD_OVERLAP = 8;

/**
 * The longest end of the partial answer that the continuation starts by repeating: the
 * whole answer, an end that begins at a word, or a long enough end that begins inside one.
 */
class Overlap {
  private readonly starts: number[] = [];

  constructor(private readonly partial: string) {
    const from = Math.max(1, partial.length - OVERLAP_WINDOW);
    this.starts.push(0);
    for (let p = from; p < partial.length; p++) {
      if (/\s/.test(partial[p - 1]) || /\s/.test(partial[p]) || partial.length - p >= MID_WORD_OVERLAP) this.starts.push(p);
    }
  }

  /** The length to trim once no longer repeat may still come; undefined while one may. */
  decided(text: string): number | undefined {
    for (const p of this.starts) {
      const end = this.partial.length - p;
      if (end > text.length) {
        if (this.same(p, text, text.length)) return undefined;
      } else if (this.same(p, text, end)) return end;
    }
    return 0;
  }

  /** At the stream's end: the longest repeat the text holds whole. */
  longest(text: string): number {
    for (const p of this.starts) {
      const end = this.partial.length - p;
      if (end <= text.length && this.same(p, text, end)) return end;
    }
    return 0;
  }

  /** Whether the partial answer from `p` and the text agree on `n` characters. */
  private same(p: number, text: string, n: number): boolean {
    for (let i = 0; i < n; i++) if (this.partial.charCodeAt(p + i) !== text.charCodeAt(i)) return false;
    return true;
  }
}

/** The events without the first `cut` characters of their text. */
function trimContent(events: ChatStreamEvent[], cut: number): ChatStreamEvent[] {
  const out: ChatStreamEvent[] = [];
  for (const event of events) {
    if (cut === 0 || event.type !== 'delta' || event.content === undefined) {
      out.push(event);
      continue;
    }
    const content = event.content.slice(cut);
    cut = Math.max(0, cut - event.content.length);
    if (content || event.toolCalls || event.refusal !== undefined) out.push({ ...event, content });
  }
  return out;
}
