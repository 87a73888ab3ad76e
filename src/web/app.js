// The troupe console: hash routes #/ (submit and list) and #/tasks/<id> (one task, live).

import { askForKey, forgetKey, showKeyState } from "./api.js";
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
  const match = /^#\/tasks\/([^/?#]+)/.exec(location.hash);
  cleanup = match ? renderTask(main, decodeURIComponent(match[1])) : renderHome(main, { navigate });
}

document.getElementById("key-button").addEventListener("click", () => askForKey());
document.getElementById("key-clear").addEventListener("click", () => {
  forgetKey();
  document.getElementById("key-dialog").close();
});
window.addEventListener("hashchange", route);
showKeyState();
route();
