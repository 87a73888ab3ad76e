// `node --import ./scripts/register-ts.mjs script.mjs`: troupe's .ts sources importable (see ts-hooks.mjs).
import { register } from "node:module";

register("./ts-hooks.mjs", import.meta.url);
