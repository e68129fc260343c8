from tfbuild.cli import main

main()
