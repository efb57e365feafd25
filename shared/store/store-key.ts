/**
 * Store keys are `/`-separated relative paths (see `shared/keys.ts`). Every backend checks them
 * the same way, so a key that works on S3 also works in a directory and cannot leave its root.
 */
export function storeKeyProblem(key: string): string | null {
  if (typeof key !== "string" || key === "") return "it is empty";
  if (key.startsWith("/")) return "it is absolute (starts with /)";
  if (key.includes("\\")) return "it contains a backslash";
  if (key.includes("\0")) return "it contains a NUL character";
  for (const segment of key.split("/")) {
    if (segment === "") return "it has an empty segment (// or a trailing /)";
    if (segment === "." || segment === "..") return `it has a "${segment}" segment`;
  }
  return null;
}

/** Throws `InvalidStoreKeyError` naming the problem. A list prefix may end with "/" or be "". */
export function assertStoreKey(key: string, what: "key" | "prefix" = "key"): string {
  const checked = what === "prefix" && key.endsWith("/") ? key.slice(0, -1) : key;
  if (what === "prefix" && checked === "") return key;
  const problem = storeKeyProblem(checked);
  if (problem)
    throw new InvalidStoreKeyError(`${what} ${JSON.stringify(key)} is not a valid store key: ${problem}`);
  return key;
}

export class InvalidStoreKeyError extends Error {}
