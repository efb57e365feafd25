// CDK entry point: `npx cdk synth --app "node infra/cdk/app.ts"` (aws-cdk CLI not bundled; synthesis
// also works without it, see test/unit/cdk-stack.test.ts).
import { App } from "aws-cdk-lib";
import { PolarStack } from "./polar-stack.ts";

const app = new App();
new PolarStack(app, process.env.POLAR_STACK_NAME ?? "Polar", {
  captureRetentionDays: Number(process.env.POLAR_CAPTURE_RETENTION_DAYS ?? 30),
});
app.synth();
