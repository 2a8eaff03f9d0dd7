// A Pi extension for tests/test_rpc.py: writes to the session when the file named by
// $PISESSION_TEST_TRIGGER appears (then removes it), as an extension's timer would, so a test
// can make Pi write in the middle of a handoff.
const fs = require("node:fs");

module.exports = function (pi) {
  let timer;
  pi.on("session_start", () => {
    const trigger = process.env.PISESSION_TEST_TRIGGER;
    if (!trigger) return;
    timer = setInterval(() => {
      if (!fs.existsSync(trigger)) return;
      const what = fs.readFileSync(trigger, "utf8");
      fs.unlinkSync(trigger);
      pi.appendEntry("foreign", { what });
    }, 20);
  });
  pi.on("session_shutdown", () => clearInterval(timer));
};
