/**
 * vLLM's error envelope: `{"error": {"message", "type", "param", "code"}}` with `code` the
 * HTTP status as a number (vLLM's ErrorInfo), so clients and the proxy see what a real server sends.
 */

export interface VllmErrorBody {
  error: { message: string; type: string; param: string | null; code: number };
}

const TYPES: Record<number, string> = {
  400: "BadRequestError",
  404: "NotFoundError",
  500: "InternalServerError",
};

/** A request the policy refuses; the app turns it into a vLLM-shaped error response. */
export class PolicyRequestError extends Error {
  readonly status: 400 | 404;
  readonly param: string | null;
  constructor(message: string, options: { status?: 400 | 404; param?: string | null } = {}) {
    super(message);
    this.status = options.status ?? 400;
    this.param = options.param ?? null;
  }
}

export function vllmError(status: number, message: string, param: string | null = null): VllmErrorBody {
  return { error: { message, type: TYPES[status] ?? "BadRequestError", param, code: status } };
}
