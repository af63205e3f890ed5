// A script with a syntax error on line 6: the run stops before any load, naming the file and line.

export function doTask() {
  const greeting = 'hello';
  // one closing parenthesis too many
  console.log(greeting));
}
