// The troupe console: hash routes #/ (submit and list), #/tasks/<id> (one task, live),
// #/evals (evals) and #/evals/<id> (one eval, live, its cases linked to their tasks).

import { askForKey, forgetKey, showKeyState } from "./api.js";
import { renderEval, renderEvals } from "./evals.js";
import { renderHome } from "./home.js";
import { renderTask } from "./task-page.js";

const main = document.getElementById("main");
let cleanup = () => {};

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function route() {
  cleanup();
  const task = /^#\/tasks\/([^/?#]+)/.exec(location.hash);
  const evaluation = /^#\/evals\/([^/?#]+)/.exec(location.hash);
  if (task) cleanup = renderTask(main, decodeURIComponent(task[1]));
  else if (evaluation) cleanup = renderEval(main, decodeURIComponent(evaluation[1]));
  else if (/^#\/evals\/?$/.test(location.hash)) cleanup = renderEvals(main, { navigate });
  else cleanup = renderHome(main, { navigate });
}

document.getElementById("key-button").addEventListener("click", () => askForKey());
document.getElementById("key-clear").addEventListener("click", () => {
  forgetKey();
  document.getElementById("key-dialog").close();
});
window.addEventListener("hashchange", route);
showKeyState();
route();
