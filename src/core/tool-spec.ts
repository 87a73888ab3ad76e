/** A tool as chat models see it: the OpenAI function format, which every provider package accepts. */
export interface ToolSpec {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}
