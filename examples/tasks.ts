/** The tasks of the three demos; `npm run bench` measures the prompt tokens each one costs. */
export { EXAMPLE_TASKS } from "../src/core/example-tasks.js";
