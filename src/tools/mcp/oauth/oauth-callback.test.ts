import { describe, expect, it } from "vitest";
import { LoopbackReceiver, loopbackAuthorizer } from "./oauth-callback.js";

describe("the loopback listener troupe mcp login waits on", () => {
  it("takes the code only with the state troupe sent, refuses other paths and states, and stops on the authorization server's error", async () => {
    const receiver = await LoopbackReceiver.open({ port: 0, server: "secure", timeoutMs: 30_000 });
    try {
      expect(receiver.redirectUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
      const presented: string[] = [];
      const authorizer = loopbackAuthorizer(receiver, (url) => void presented.push(url.href));
      const state = authorizer.state();
      const code = authorizer.authorize(new URL("https://auth.example.com/authorize"));
      expect((await fetch(`${receiver.redirectUrl}?code=stolen&state=guessed`)).status).toBe(400);
      expect((await fetch(receiver.redirectUrl.replace("/callback", "/other"))).status).toBe(404);
      const page = await fetch(`${receiver.redirectUrl}?code=the-code&state=${state}`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("troupe may now use the MCP server secure");
      expect(await code).toBe("the-code");
      expect(presented).toEqual(["https://auth.example.com/authorize"]);
      // Used once: the same redirect again belongs to no login.
      expect((await fetch(`${receiver.redirectUrl}?code=the-code&state=${state}`)).status).toBe(400);

      const refusedState = authorizer.state();
      const refused = authorizer.authorize(new URL("https://auth.example.com/authorize"));
      const settled = refused.catch((error: unknown) => error);
      const denied = await fetch(`${receiver.redirectUrl}?error=access_denied&error_description=${encodeURIComponent("<b>no</b>")}&state=${refusedState}`);
      expect(await denied.text()).toContain("access_denied: &#60;b&#62;no&#60;/b&#62;");
      expect(await settled).toMatchObject({ code: "mcp_login_required", message: 'the authorization server of "secure" refused: access_denied: <b>no</b>' });
    } finally {
      await receiver.close();
    }
  });

  it("gives up after its time limit, saying so", async () => {
    const receiver = await LoopbackReceiver.open({ port: 0, server: "slow", timeoutMs: 50 });
    try {
      await expect(receiver.expect().code).rejects.toMatchObject({ code: "mcp_login_required", message: 'nobody finished the login of "slow" within 0 s' });
    } finally {
      await receiver.close();
    }
  });
});
