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

/** Every control character, line breaks and tabs included: one owner-written value must stay on its line. */
const CONTROLS_IN_A_VALUE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/g;
const codePoint = (c: string) => c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');

/**
 * A value for a terminal, as the dashboard shows it: a control, line break or bidi override becomes `[U+001B]`, so an
 * id cannot clear the screen, set the title, forge a line or read backwards.
 */
export function showControls(text: string): string {
  return text.replace(CONTROLS_IN_A_VALUE, (c) => `[U+${codePoint(c)}]`);
}

/** JSON for a terminal: the same value, with the characters JSON leaves raw (C1 controls, bidi) written as \uXXXX. */
export function jsonForTerminal(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(/[\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/g, (c) => `\\u${codePoint(c)}`);
}
