// The program of tests/rooms/CMakeLists.txt's executables: what is checked is that they link.
int main() {
  return 0;
}
