import { App } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import { PolarStack } from "../../infra/cdk/polar-stack.ts";

describe("AWS CDK stack (synthesized offline)", () => {
  let template: Template;
  beforeAll(() => {
    const app = new App();
    template = Template.fromStack(
      new PolarStack(app, "Test", { captureRetentionDays: 10, maxReceiveCount: 4 }),
    );
  });

  it("has an encrypted, private bucket that expires raw captures only", () => {
    template.resourceCountIs("AWS::S3::Bucket", 1);
    template.hasResourceProperties("AWS::S3::Bucket", {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ Prefix: "captures/", ExpirationInDays: 10, Status: "Enabled" }),
        ]),
      },
    });
    const rules = Object.values(template.findResources("AWS::S3::Bucket"))[0].Properties
      .LifecycleConfiguration.Rules as { Prefix?: string; ExpirationInDays?: number }[];
    for (const kept of ["results/", "trajectories/", "tasks/"]) {
      expect(rules.some((r) => r.Prefix === kept && r.ExpirationInDays)).toBe(false);
    }
  });

  it("has a jobs queue that redrives to a dead-letter queue after N receives", () => {
    template.resourceCountIs("AWS::SQS::Queue", 3);
    template.hasResourceProperties("AWS::SQS::Queue", {
      RedrivePolicy: { maxReceiveCount: 4, deadLetterTargetArn: Match.anyValue() },
      ReceiveMessageWaitTimeSeconds: 20,
    });
  });

  it("gives the proxy and the runner least-privilege policies", () => {
    const policies = template.findResources("AWS::IAM::Policy");
    const statementsOf = (rolePrefix: string) =>
      Object.entries(policies)
        .filter(([name]) => name.startsWith(rolePrefix))
        .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as { Action: string | string[] }[]);
    const actions = (rolePrefix: string) =>
      new Set(statementsOf(rolePrefix).flatMap((s) => [s.Action].flat()));

    const proxy = actions("ProxyRole");
    expect(proxy.has("s3:PutObject")).toBe(true);
    expect(proxy.has("sqs:SendMessage")).toBe(true);
    expect(proxy.has("sqs:ReceiveMessage")).toBe(false);
    expect(proxy.has("s3:DeleteObject")).toBe(false);

    const runner = actions("RunnerRole");
    for (const a of [
      "sqs:ReceiveMessage",
      "sqs:DeleteMessage",
      "sqs:ChangeMessageVisibility",
      "s3:PutObject",
    ]) {
      expect(runner.has(a), a).toBe(true);
    }
    expect(runner.has("s3:DeleteObject")).toBe(false);
    for (const s of [...statementsOf("ProxyRole"), ...statementsOf("RunnerRole")]) {
      expect([s.Action].flat()).not.toContain("*");
      expect([s.Action].flat().some((a) => a.endsWith(":*"))).toBe(false);
    }
  });
});
