import { describeHarnessE2E } from "./harness-e2e.ts";

describeHarnessE2E("cline");
