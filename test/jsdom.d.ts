/**
 * The little of jsdom's API the React test uses (its own types would bring the DOM library into
 * the whole project, whose code runs on Node): a document, with its window and navigator.
 */
declare module "jsdom" {
  export class JSDOM {
    constructor(html?: string, options?: { url?: string });
    readonly window: { document: unknown; navigator: unknown; close(): void };
  }
}
