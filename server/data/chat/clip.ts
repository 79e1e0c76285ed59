// `character_limit` of the Chat API: an answer longer than the limit is cut at the last
// sentence end that fits, else at the last word that fits (with an ellipsis), never beyond.
export function clip(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const ends = [...text.matchAll(/[.!?]["”’)]*(?=\s|$)/g)].map((m) => m.index + m[0].length).filter((end) => end <= limit);
  if (ends.length > 0) return text.slice(0, ends.at(-1));
  const room = text.slice(0, Math.max(limit - 1, 0));
  const wordEnd = room.lastIndexOf(' ');
  return `${(wordEnd > 0 ? room.slice(0, wordEnd) : room).trimEnd()}…`;
}
