/** Shortens by code points, so a cut never splits a surrogate pair into invalid UTF-8. */
export function clipText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const points = Array.from(text);
  return points.length <= maxChars ? text : `${points.slice(0, maxChars - 1).join('')}…`;
}

/** C0/C1 controls and the Unicode bidi and invisible format characters (U+202E can make a line read backwards). */
const UNSAFE_CHARS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;

/** Text shown to a person (a phone notification, a page, a log line): controls and bidi overrides removed. */
export function withoutControlChars(text: string): string {
  return text.replace(UNSAFE_CHARS, '');
}
