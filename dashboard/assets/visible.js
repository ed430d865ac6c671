// Every page's text guard: controls and bidi overrides are shown as [U+XXXX], never obeyed (an event id with U+202E
// must not reverse a row).
const visible = (text) =>
  String(text).replace(
    /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g,
    (c) => `[U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}]`,
  );
