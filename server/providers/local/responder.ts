// The local "model": a deterministic, rule-based responder with no language model behind
// it. It answers from the conversation itself: tool results when the last message is one,
// a tool call when tools are forced or clearly asked for, otherwise the context sentences
// most relevant to the last user message, or an honest statement of what it is. The same
// request always gets the same reply; limits (stop, max tokens, prefix) are applied by the
// provider on top.
import { createHash } from 'node:crypto';
import { ProviderError, type ChatMessage, type ChatRequest, type ToolCall, type ToolDefinition } from '../types.js';
import { groundedAnswer } from './extractive-answer.js';
import { instanceOf, type Hint } from './json-instance.js';
import { contentTerms } from './terms.js';

export type Reply = { kind: 'text'; text: string } | { kind: 'tool_calls'; calls: ToolCall[] };

/** Property names whose natural value is free text: the user's request, or the answer. */
const FREE_TEXT = /^(query|q|text|input|prompt|question|message|content|search|search_query|keywords|topic|subject|answer|response|reply|summary|output|result|explanation|description)$/i;
/** Verbs in tool names that say nothing about what the tool is for. */
const GENERIC_NAME_TERMS = new Set(['get', 'set', 'fetch', 'do', 'make', 'run', 'call', 'use', 'tool', 'function', 'create', 'update']);
const MAX_SENTENCES = 3;
const SUMMARY_WORDS = 30;

export function respond(request: ChatRequest): Reply {
  const { messages } = request;
  const userIndex = messages.findLastIndex((m) => m.role === 'user');
  const userText = userIndex >= 0 ? textOf(messages[userIndex]) : '';

  if (messages.at(-1)?.role !== 'tool') {
    const tool = chooseTool(request, userText);
    if (tool) return { kind: 'tool_calls', calls: [toolCall(tool, userText)] };
  }
  const answer =
    messages.at(-1)?.role === 'tool'
      ? fromToolResults(messages)
      : (groundedAnswer(messages, userText) ?? fromContext(messages.slice(0, Math.max(userIndex, 0)), userText, userIndex >= 0));
  return { kind: 'text', text: formatted(request, answer, userText) };
}

function textOf(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  return (message.content ?? []).flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}

// ---- tools ----

function chooseTool(request: ChatRequest, userText: string): ToolDefinition | undefined {
  const tools = request.tools ?? [];
  const choice = request.toolChoice ?? 'auto';
  if (tools.length === 0 || choice === 'none') return undefined;
  if (typeof choice === 'object') {
    const named = tools.find((tool) => tool.function.name === choice.function.name);
    if (!named) throw new ProviderError('bad_request', `tool_choice names ${choice.function.name}, which is not among the tools`);
    return named;
  }
  const asked = new Set(contentTerms(userText));
  const scored = tools.map((tool) => {
    const nameTerms = new Set(contentTerms(tool.function.name.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_-]/g, ' ')));
    const nameHits = [...nameTerms].filter((term) => !GENERIC_NAME_TERMS.has(term) && asked.has(term)).length;
    const descriptionHits = [...new Set(contentTerms(tool.function.description ?? ''))].filter((term) => asked.has(term) && !nameTerms.has(term)).length;
    return { tool, score: 2 * nameHits + descriptionHits, clear: nameHits > 0 || descriptionHits >= 2 };
  });
  // Stable: on equal scores the earlier tool wins.
  const best = scored.reduce((a, b) => (b.score > a.score ? b : a));
  return choice === 'required' || best.clear ? best.tool : undefined;
}

function toolCall(tool: ToolDefinition, userText: string): ToolCall {
  const schema = tool.function.parameters ?? { type: 'object', properties: {} };
  const args = JSON.stringify(instanceOf(schema, (name) => (FREE_TEXT.test(leaf(name)) ? userText.trim() : valueAfterName(userText, leaf(name)))));
  const id = `call_${createHash('sha256').update(`${tool.function.name}\n${args}\n${userText}`).digest('hex').slice(0, 16)}`;
  return { id, type: 'function', function: { name: tool.function.name, arguments: args } };
}

function leaf(path: string): string {
  return path.slice(path.lastIndexOf('.') + 1);
}

/**
 * The value a message gives for a property it names: `city: "San Francisco"`, `city is
 * Paris`, `units celsius`: a quoted string, or one word plus any capitalised words after it.
 */
function valueAfterName(text: string, name: string): string | undefined {
  const words = name.replace(/([a-z])([A-Z])/g, '$1 $2').split(/[_\s-]+/).filter(Boolean).map(escapeRegExp);
  if (words.length === 0) return undefined;
  const label = new RegExp(`\\b${words.join('[\\s_-]*')}\\b\\s*(?:[:=]|\\b(?:is|of|to|for|named|called)\\b)?\\s*`, 'iu');
  const match = label.exec(text);
  if (!match) return undefined;
  const rest = text.slice(match.index + match[0].length);
  const quoted = /^(["'“])(.*?)["'”]/u.exec(rest);
  if (quoted) return quoted[2];
  const value = /^[^\s,;!?]+?(?=[.,;!?]?(?:\s|$))(?:\s+\p{Lu}[^\s,;!?]*?(?=[.,;!?]?(?:\s|$)))*/u.exec(rest);
  return value?.[0] || undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ---- text answers ----

/** After a tool round trip: report what the tools returned, which ends the loop. */
function fromToolResults(messages: ChatMessage[]): string {
  const callerIndex = messages.findLastIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
  const names = new Map((messages[callerIndex]?.tool_calls ?? []).map((call) => [call.id, call.function.name]));
  const results = messages.slice(callerIndex + 1).filter((m) => m.role === 'tool');
  const lines = results.map((m) => `${names.get(m.tool_call_id ?? '') ?? 'The tool'} returned: ${squeeze(textOf(m), 400)}`);
  return `Here is what the tool${results.length > 1 ? 's' : ''} returned. ${lines.join(' ')}`;
}

/** Sentences of earlier messages (system, user, tool: not its own answers) that match the question. */
function fromContext(earlier: ChatMessage[], userText: string, hasUser: boolean): string {
  const sentences = earlier.filter((m) => m.role !== 'assistant').flatMap((m) => sentencesOf(textOf(m)));
  const picked = relevant(sentences, new Set(contentTerms(userText)));
  if (picked.length > 0) return `From the text in this conversation: ${picked.join(' ')}`;
  const intro =
    "I'm the platform's built-in local model: a deterministic, rule-based responder with no language model behind it, so I can only answer from text in this conversation.";
  if (!hasUser) return `${intro} There is no user message to answer.`;
  const missing = sentences.length > 0 ? ' Nothing in the provided context matches it.' : '';
  return `${intro} You asked: "${squeeze(userText, Infinity, SUMMARY_WORDS)}".${missing}`;
}

function sentencesOf(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.replace(/^\s*(?:[-*•]|\[\d+\]|\d+[.)])\s*/, '').trim())
    .filter((s) => s.split(/\s+/).length >= 3);
}

/** The best few sentences by overlap weighted with inverse sentence frequency, in their order. */
function relevant(sentences: string[], asked: Set<string>): string[] {
  const termSets = sentences.map((s) => new Set(contentTerms(s)));
  const frequency = new Map<string, number>();
  for (const terms of termSets) for (const term of terms) if (asked.has(term)) frequency.set(term, (frequency.get(term) ?? 0) + 1);
  const scores = termSets.map((terms) => [...terms].reduce((sum, term) => sum + (asked.has(term) ? Math.log(1 + sentences.length / frequency.get(term)!) : 0), 0));
  const best = Math.max(0, ...scores);
  if (best === 0) return [];
  return scores
    .map((score, index) => ({ score, index }))
    .filter(({ score }) => score >= best / 2)
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, MAX_SENTENCES)
    .sort((a, b) => a.index - b.index)
    .map(({ index }) => sentences[index]);
}

/** Whitespace collapsed, then cut to a number of characters or words with an ellipsis. */
function squeeze(text: string, maxChars: number, maxWords = Infinity): string {
  const words = text.trim().split(/\s+/).filter(Boolean);
  let out = words.slice(0, maxWords).join(' ');
  if (out.length > maxChars) out = out.slice(0, maxChars);
  return out.length < words.join(' ').length ? `${out}…` : out;
}

// ---- response_format ----

function formatted(request: ChatRequest, answer: string, userText: string): string {
  const format = request.responseFormat;
  if (!format || format.type === 'text') return answer;
  if (format.type === 'json_object' || !format.json_schema.schema) return JSON.stringify({ answer });
  const hint: Hint = (name) => (FREE_TEXT.test(leaf(name)) ? answer : valueAfterName(userText, leaf(name)));
  return JSON.stringify(instanceOf(format.json_schema.schema, hint));
}
