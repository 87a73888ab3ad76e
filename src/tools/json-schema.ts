import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/** One ajv instance for the tools layer: compiled schemas are cached by it, formats (date-time, email, uri, …) checked. */
export const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
addFormats.default(ajv);

export interface SchemaViolation {
  path: string;
  message: string;
}
