/** The control API's error shape: `{"error": {"message": "..."}}`, the message naming what to fix. */
export function errorBody(message: string) {
  return { error: { message } };
}

/** The answer of the runtime routes where the host keeps no state between requests (the Worker). */
export function noRuntimeState() {
  return errorBody(
    "this host keeps no replica set or policy version between requests (a Worker isolate): list the replicas " +
      "in UPSTREAM_URLS and name versions with x-polar-policy-version or an engine that reports them " +
      '(docs/control-api.md "Engines and versions the trainer owns")',
  );
}
