/**
 * POSIX single-quoting: the text reaches the command as one argument, whatever it contains. Used by
 * harness command templates and by evaluators that run a test command in the sandbox.
 */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
