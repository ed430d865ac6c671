/**
 * `${VAR}` / `${VAR:-default}` substitution over a parsed YAML tree. Working on the tree (not the raw text) keeps
 * the key path of every string, so an unset variable is reported with the key that needs it.
 */
const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export interface InterpolationProblem {
  path: string;
  message: string;
}

export function interpolate(node: unknown, env: NodeJS.ProcessEnv, problems: InterpolationProblem[], path = ''): unknown {
  if (typeof node === 'string') return interpolateString(node, env, problems, path);
  if (Array.isArray(node)) return node.map((item, i) => interpolate(item, env, problems, `${path}[${i}]`));
  if (node !== null && typeof node === 'object') {
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, interpolate(value, env, problems, path ? `${path}.${key}` : key)]));
  }
  return node;
}

function interpolateString(text: string, env: NodeJS.ProcessEnv, problems: InterpolationProblem[], path: string): unknown {
  const whole = /^\$\{[^}]+\}$/.test(text);
  const replaced = text.replace(PLACEHOLDER, (_match, name: string, fallback: string | undefined) => {
    const value = env[name];
    if (value !== undefined && value !== '') return value;
    if (fallback !== undefined) return fallback;
    problems.push({ path, message: `environment variable ${name} is not set` });
    return '';
  });
  // A value that is only a placeholder may stand for a number or boolean (e.g. `port: ${PORT:-13109}`).
  if (whole && /^(-?\d+(\.\d+)?|true|false)$/.test(replaced)) return JSON.parse(replaced);
  return replaced;
}
