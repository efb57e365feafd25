import { z } from "zod";
import { eitherCase } from "./snake-case.ts";

/**
 * The generateContent request as Gemini CLI and @google/genai send it. Unknown fields (safety
 * settings, cachedContent, labels) are ignored; field types that would corrupt the prompt are strict.
 */

const JsonObject = z.record(z.string(), z.unknown());

const Blob = eitherCase(z.object({ mimeType: z.string().optional(), data: z.string() }));
const FileData = eitherCase(z.object({ mimeType: z.string().optional(), fileUri: z.string() }));

const FunctionCall = eitherCase(
  z.object({ id: z.string().optional(), name: z.string().min(1), args: JsonObject.nullish() }),
);

const FunctionResponse = eitherCase(
  z.object({
    id: z.string().optional(),
    name: z.string().optional(),
    response: z.unknown().optional(),
    /** Multimodal function responses (Gemini 3): media parts that belong to the result. */
    parts: z
      .array(eitherCase(z.looseObject({ inlineData: Blob.optional(), fileData: FileData.optional() })))
      .optional(),
  }),
);

const Part = eitherCase(
  z.object({
    text: z.string().optional(),
    thought: z.boolean().optional(),
    thoughtSignature: z.string().optional(),
    inlineData: Blob.optional(),
    fileData: FileData.optional(),
    functionCall: FunctionCall.optional(),
    functionResponse: FunctionResponse.optional(),
  }),
);
export type GooglePart = z.infer<typeof Part>;

const Content = eitherCase(z.object({ role: z.string().optional(), parts: z.array(Part).default([]) }));
export type GoogleContent = z.infer<typeof Content>;

const FunctionDeclaration = eitherCase(
  z.object({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: JsonObject.optional(),
    parametersJsonSchema: JsonObject.optional(),
  }),
);
export type GoogleFunctionDeclaration = z.infer<typeof FunctionDeclaration>;

const Tool = eitherCase(z.looseObject({ functionDeclarations: z.array(FunctionDeclaration).optional() }));

const ToolConfig = eitherCase(
  z.object({
    functionCallingConfig: eitherCase(
      z.object({ mode: z.string().optional(), allowedFunctionNames: z.array(z.string()).optional() }),
    ).optional(),
  }),
);

const ThinkingConfig = eitherCase(
  z.object({
    thinkingBudget: z.number().int().optional(),
    includeThoughts: z.boolean().optional(),
    thinkingLevel: z.string().optional(),
  }),
);

const GenerationConfig = eitherCase(
  z.object({
    temperature: z.number().optional(),
    topP: z.number().optional(),
    topK: z.number().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    stopSequences: z.array(z.string()).optional(),
    candidateCount: z.number().int().positive().optional(),
    seed: z.number().int().optional(),
    presencePenalty: z.number().optional(),
    frequencyPenalty: z.number().optional(),
    responseMimeType: z.string().optional(),
    responseSchema: JsonObject.optional(),
    responseJsonSchema: JsonObject.optional(),
    thinkingConfig: ThinkingConfig.optional(),
  }),
);
export type GoogleGenerationConfig = z.infer<typeof GenerationConfig>;

/** REST sends Content; some clients send a bare string. */
const SystemInstruction = z.union([z.string(), Content]);

export const GoogleRequest = eitherCase(
  z.object({
    model: z.string().optional(),
    contents: z.array(Content),
    systemInstruction: SystemInstruction.optional(),
    tools: z.array(Tool).optional(),
    toolConfig: ToolConfig.optional(),
    generationConfig: GenerationConfig.optional(),
  }),
);
export type GoogleRequest = z.infer<typeof GoogleRequest>;
export type GoogleTool = NonNullable<GoogleRequest["tools"]>[number];
export type GoogleToolConfig = NonNullable<GoogleRequest["toolConfig"]>;
