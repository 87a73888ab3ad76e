import { measureOverhead } from "./overhead.js";
console.log(JSON.stringify(await measureOverhead({ runs: 20, warmupRuns: 2, concurrency: 8 }), null, 1));
