/** The control API's error shape: `{"error": {"message": "..."}}`, the message naming what to fix. */
export function errorBody(message: string) {
  return { error: { message } };
}

/** The answer of the runtime routes on a host started without them (`ControlDeps.runtimeState` off). */
export function noRuntimeState() {
  return errorBody(
    "this proxy was started without the runtime routes (runtimeState): list the replicas " +
      "in UPSTREAM_URLS and name versions with x-polar-policy-version or an engine that reports them " +
      '(docs/control-api.md "Engines and versions the trainer owns")',
  );
}
