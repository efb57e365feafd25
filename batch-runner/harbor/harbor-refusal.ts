/** A Harbor task Polar cannot run as it is: the message names the file (and field or line) and why. */
export class HarborTaskRefused extends Error {}
