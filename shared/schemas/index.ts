export * from "./capture.ts";
export * from "./common.ts";
export * from "./task.ts";
export * from "./trajectory.ts";
