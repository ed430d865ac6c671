/** Shortens by code points, so a cut never splits a surrogate pair into invalid UTF-8. */
export function clipText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const points = Array.from(text);
  return points.length <= maxChars ? text : `${points.slice(0, maxChars - 1).join('')}…`;
}
